"""`census twins` (census.modular_twins): each modular config beside its classic twin, the places only one of them
finds, and no claim where the two did not both reach a verdict."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pytest_nosync import ids, run_report
from pytest_nosync.census import modular_twins, outcomes, table
from pytest_nosync.census.outcomes import Coverage
from pytest_nosync.findings import Finding, Report, Status

SCHEDULER = "/x/diffusers/schedulers/scheduling_flow_match_euler_discrete.py:405"
MODULAR_LOOP = "/x/diffusers/modular_pipelines/flux/denoise.py:107"
CLASSIC_LOOP = "/x/diffusers/pipelines/flux/pipeline_flux.py:950"
MODULAR = "tests/modular_pipelines/flux/test_modular_pipeline_flux.py::TestFluxImg2ImgModularPipelineFast"
CLASSIC = "tests/pipelines/flux/test_pipeline_flux_img2img.py::FluxImg2ImgPipelineFastTests"
TEXT = "tests/pipelines/flux/test_pipeline_flux.py::FluxPipelineFastTests"
WAN = "tests/modular_pipelines/wan/test_modular_pipeline_wan.py::TestWanModularPipelineFast"


def _syncs(tester: str, *places: str) -> Report:
    findings = [Finding("dtoh_sync", where, step=step, status=Status.FAIL) for where in places for step in (1, 2)]
    return Report(findings, test_id=str(ids.CensusId(tester, "syncs")), check="syncs", target=tester)


def _census(*rows: tuple[str, str, Report | None]) -> tuple[list[Report], Coverage]:
    coverage, reports = Coverage(), []
    for tester, pipeline, report in rows:
        if report is None:
            coverage.add(tester, "syncs", outcomes.skipped("the hub repository has no stand-in", pipeline))
            continue
        reports.append(report)
        coverage.add(tester, "syncs", outcomes.outcome_of(report, pipeline))
    return reports, coverage


def test_a_configs_twin_is_named_by_its_class_and_workflow() -> None:
    assert modular_twins.twin_names("FluxModularPipeline", "TestFluxImg2ImgModularPipelineFast") == [
        "FluxImg2ImgPipeline", "FluxPipeline"]  # fmt: skip
    assert modular_twins.twin_names("StableDiffusionXLModularPipeline", "TestSDXLImg2ImgModularPipelineFast")[0] == (
        "StableDiffusionXLImg2ImgPipeline"
    )
    assert modular_twins.twin_names("WanModularPipeline", "TestWanModularPipelineFast") == ["WanPipeline"]


def test_the_places_only_one_finds_are_named_and_a_config_without_a_verdict_claims_nothing() -> None:
    reports, coverage = _census(
        (MODULAR, "FluxModularPipeline", _syncs(MODULAR, SCHEDULER, MODULAR_LOOP)),
        (CLASSIC, "FluxImg2ImgPipeline", _syncs(CLASSIC, SCHEDULER, CLASSIC_LOOP)),
        (TEXT, "FluxPipeline", _syncs(TEXT, SCHEDULER)),
        (WAN, "WanModularPipeline", None),
    )
    found = {p.modular.tester: p for p in modular_twins.pairs(table.rows(reports, coverage))}
    flux = found[MODULAR]
    assert flux.classic is not None and flux.classic.pipeline == "FluxImg2ImgPipeline" and flux.compared == 1
    (difference,) = flux.differences
    assert list(difference.only_modular) == ["diffusers/modular_pipelines/flux/denoise.py:107"]
    assert list(difference.only_classic) == ["diffusers/pipelines/flux/pipeline_flux.py:950"]
    assert found[WAN].classic is None

    text = modular_twins.render(list(found.values()), {"diffusers": "0.40.0"}, "T")
    assert "2 modular config(s), 1 compared with a classic twin" in text and "0 find the same places" in text
    assert (
        "`diffusers/modular_pipelines/flux/denoise.py:107` | `diffusers/pipelines/flux/pipeline_flux.py:950` |" in text
    )
    assert (
        "| WanModularPipeline (test_modular_pipeline_wan.py::TestWanModularPipelineFast) | none in this census |"
        in text
    )


def test_a_twin_neither_reached_a_verdict_with_is_not_called_the_same() -> None:
    reports, coverage = _census((MODULAR, "FluxModularPipeline", None), (TEXT, "FluxPipeline", _syncs(TEXT, SCHEDULER)))
    (pair,) = modular_twins.pairs(table.rows(reports, coverage))
    assert pair.classic is not None and pair.compared == 0 and pair.differences == ()
    text = modular_twins.render([pair], {}, "T")
    assert "none both reached a verdict in" in text and "| the same |" not in text


def test_the_command_renders_a_report(tmp_path: Path) -> None:
    reports, coverage = _census(
        (MODULAR, "FluxModularPipeline", _syncs(MODULAR, SCHEDULER)), (TEXT, "FluxPipeline", _syncs(TEXT, SCHEDULER))
    )
    path = tmp_path / "census.json"
    doc = run_report.document(reports, {"diffusers": "0.40.0", "backend": "cuda"}, {"census": coverage.to_dict()})
    path.write_text(json.dumps(doc))
    done = subprocess.run([sys.executable, "-m", "pytest_nosync", "census", "twins", str(path)], capture_output=True,
                          text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "1 find the same places in every such check, 0 differ" in done.stdout
    assert "| the 1 both reached a verdict in | the same | the same |" in done.stdout
