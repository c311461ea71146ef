"""The census table (census_table, `python -m pytest_nosync census`): one row per tester class from a run's report,
also from a census run in parts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pytest_nosync import census_table, run_report
from pytest_nosync.findings import Finding, Phase, Report, Status

UNIPC = "/ckpt/src/diffusers/schedulers/scheduling_unipc_multistep.py:886"


def _report(tester: str, check: str, *findings: Finding) -> Report:
    test_id = f"tests/pipelines/{tester}::nosync[{check}]@tests/pipelines/{tester}"  # as xdist's loadgroup says it
    pipeline = tester.split("::")[1].removesuffix("FastTests")
    return Report(list(findings), test_id=test_id, check=check, target=tester, metrics={"pipeline": pipeline})


def _sync(step: int | None, where: str = UNIPC, status: Status = Status.FAIL) -> Finding:
    phase = Phase.IN_STEP if step is not None else Phase.AFTER_STEPS
    return Finding("htod_sync", where, step=step, phase=phase, count=2, status=status)


WAN = "wan/test_wan.py::WanFastTests"
FLUX = "flux/test_flux.py::FluxFastTests"
GLM = "glm/test_glm.py::GlmFastTests"


def _parts() -> tuple[list[Report], dict, list[Report], dict]:
    first = [
        _report(WAN, "syncs", _sync(0), _sync(1), _sync(1, status=Status.KNOWN), _sync(None)),
        _report(
            WAN, "graph_breaks", Finding("graph_break", "/x/diffusers/models/wan.py:10", step=0, status=Status.FAIL)
        ),
        _report(WAN, "alloc_growth"),
        _report(WAN, "host_overhead"),
    ]
    first_census = {"classes": 1, "checked": 1, "not_checked": {}, "outcomes": {f"tests/pipelines/{WAN}": {}}}
    second = [_report(FLUX, check) for check in ("syncs", "graph_breaks", "alloc_growth", "host_overhead")]
    second_census = {
        "classes": 2,
        "checked": 1,
        "not_checked": {"needs a hub repository": [f"tests/pipelines/{GLM}"]},
        "outcomes": {f"tests/pipelines/{FLUX}": {}, f"tests/pipelines/{GLM}": {}},
    }
    return first, first_census, second, second_census


def test_a_row_counts_a_steady_steps_syncs_known_included_and_names_their_places() -> None:
    first, census, _, _ = _parts()
    (row,) = census_table.rows(first, census)
    # step 1 had 2 + 2 (the known one counts: the census maps what the code does); after the steps does not count
    assert row["syncs"] == "4: `diffusers/schedulers/scheduling_unipc_multistep.py:886`"
    assert row["graph"] == "1: `diffusers/models/wan.py:10`"
    assert (row["growth"], row["walks"], row["note"]) == ("0", "0", "")


def test_a_place_without_a_file_is_named_as_it_is() -> None:
    generated = _report(WAN, "syncs", _sync(1, where="<eval_with_key>.21:18"))
    (row,) = census_table.rows([generated], {})
    assert row["syncs"] == "2: `<eval_with_key>.21:18`"


def test_parts_of_one_census_merge_into_one_table() -> None:
    first, first_census, second, second_census = _parts()
    merged = census_table.merge([first_census, second_census])
    assert (merged["classes"], merged["checked"]) == (3, 2)
    table = census_table.rows(first + second, merged)
    assert [r["tester"] for r in table] == [
        "test_flux.py::FluxFastTests",
        "test_wan.py::WanFastTests",
        "test_glm.py::GlmFastTests",
    ]  # fmt: skip  (by pipeline; unknown last)
    assert table[2]["note"] == "not checked: needs a hub repository" and table[2]["syncs"] == "—"
    assert table[0]["syncs"] == "0"


def test_the_command_renders_a_census_run_in_parts(tmp_path: Path) -> None:
    first, first_census, second, second_census = _parts()
    paths = []
    for i, (reports, census) in enumerate([(first, first_census), (second, second_census)]):
        doc = run_report.document(reports, {"diffusers": "0.40.0.dev0", "backend": "cuda"}, {"census": census})
        paths.append(tmp_path / f"part{i}.json")
        paths[-1].write_text(json.dumps(doc))
    done = subprocess.run([sys.executable, "-m", "pytest_nosync", "census", *map(str, paths), "--title", "T"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert "2 of 3 pipeline tester classes checked; 1 with a sync in their steady steps, 0 raised." in done.stdout
    assert done.stdout.count("\n| ") == 5  # the header, its separator and three classes
