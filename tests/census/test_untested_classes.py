"""Exported pipeline classes no tester names (census.untested), on a family written here (tests/twins/
untested_pipelines.py) beside the loop's tester: each checked through that sibling tester, under its own id, a sync
in its loop found at its line; a deprecated one checked too, its row noted; one whose call requires an input no
sibling gives counted with its reason, never passed; a class of a family no tester tests checked through another
family's tester module (one, the same in every shard); the coverage line counting exported classes."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch
from diffusers import ConfigMixin, DDIMScheduler, SchedulerMixin, UnCLIPScheduler
from diffusers.configuration_utils import register_to_config

from pytest_nosync import ids
from pytest_nosync.census import table, untested
from pytest_nosync.census.outcomes import Coverage
from pytest_nosync.findings import Report
from tests.twins import untested_pipelines
from tests.twins.loop_pipeline import Denoiser, Scheduler

TESTER = """
import torch

from tests.twins.loop_pipeline import Denoiser, LoopPipeline, Scheduler


class LoopTesterConfig:
    pipeline_class = LoopPipeline

    def get_dummy_components(self):
        torch.manual_seed(0)
        return {"transformer": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 2, "strength": 1.0, "read_early": False}


class TestLoop(LoopTesterConfig):
    def test_own(self):
        pass
"""

SIBLING = "test_loop.py::TestLoop"
CENSUS_EXPORTS = untested.census_exports  # the module's own, which the fixture below stands in for


EMULATED_SYNCS = (
    "-m",
    "gpu",
    "--nosync",
    "--nosync-backend=emulate",
    "-k",
    "nosync and syncs",
    "-p",
    "no:cacheprovider",
)


def _census_with_exports(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, entries: list[untested.Exported], *args: str
) -> pytest.RunResult:
    """The loop's tester module checked for syncs under the emulation, `entries` standing for what diffusers
    exports."""
    monkeypatch.setattr(untested, "census_exports", lambda pipeline_classes, modules: entries)
    pytester.makepyfile(test_loop=TESTER)
    return pytester.runpytest(*EMULATED_SYNCS, *args)


def _loop_family(*classes: type) -> list[untested.Exported]:
    """Classes of the loop's family, as diffusers would export them."""
    return [untested.Exported(cls.__name__, "loop", cls) for cls in classes]


@pytest.fixture(autouse=True)
def _exports(monkeypatch: pytest.MonkeyPatch) -> None:
    """The twins' family is what the installed diffusers exports in these runs."""
    monkeypatch.setattr(untested, "census_exports", lambda pipeline_classes, modules: untested_pipelines.exported())


@pytest.fixture(autouse=True, scope="module")
def _dynamo_loaded() -> None:
    """Traced once here first (see tests/census/test_tester_classes.py)."""
    import torch

    torch._dynamo.explain(lambda x: x + 1)(torch.ones(2))
    torch._dynamo.reset()


def test_each_untested_class_gets_the_testers_checks_under_its_sibling_and_its_own_name(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_loop=TESTER)
    result = pytester.runpytest("--nosync", "--collect-only", "-q", "-p", "no:cacheprovider")
    checks = [line for line in result.outlines if "nosync[" in line]
    named = ("SyncingLoopPipeline", "CleanLoopPipeline", "NeedsInputPipeline", "DeprecatedLoopPipeline")
    assert checks == [
        f"{SIBLING}::nosync[{check}]" for check in ("syncs", "graph_breaks", "alloc_growth", "host_overhead")
    ] + [
        f"{ids.untested_tester(SIBLING, name)}::nosync[{check}]"
        for name in named
        for check in ("syncs", "graph_breaks", "alloc_growth", "host_overhead")
    ]
    assert ids.parse_untested(ids.parse(checks[-1]).tester) == ("test_loop.py::TestLoop", "DeprecatedLoopPipeline")
    assert ids.parse_untested(SIBLING) is None


def test_an_untested_class_is_checked_through_its_sibling_a_sync_at_its_line_the_rest_counted(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_loop=TESTER)
    args = ("-m", "gpu", "--nosync", "--nosync-backend=emulate", "-k", "nosync and syncs", "-p", "no:cacheprovider")
    result = pytester.runpytest(*args, "--nosync-report=report.json")
    result.assert_outcomes(passed=3, failed=1, skipped=1)
    out = result.stdout.str()
    line = untested_pipelines.line_of("syncs per step", untested_pipelines.SyncingLoopPipeline)
    result.stdout.fnmatch_lines([f"*dtoh_sync*untested_pipelines.py:{line}*step 0 ×1, step 1 ×1*"])
    assert f"FAILED {SIBLING}::SyncingLoopPipeline::nosync[syncs]" in out
    # deprecated, and tried all the same (it was never tried: a class users still run went unchecked)
    assert "nosync: 4 of 5 exported pipeline classes checked (3 through a sibling tester, 1 deprecated); 1 not:" in out
    assert (
        "  1 class(es): requires the input(s) mask in __call__, which no sibling tester of loop "
        "gives (e.g. NeedsInputPipeline)" in out
    )
    doc = json.loads((pytester.path / "report.json").read_text())
    outcomes = doc["census"]["outcomes"]
    assert outcomes[f"{SIBLING}::CleanLoopPipeline"]["syncs"]["verdict"] == "checked"
    assert outcomes[f"{SIBLING}::CleanLoopPipeline"]["syncs"]["passed"] is True
    assert outcomes[f"{SIBLING}::NeedsInputPipeline"]["syncs"]["verdict"] == "skipped"
    assert doc["census"]["exports"]["DeprecatedLoopPipeline"] == ""
    assert outcomes[f"{SIBLING}::DeprecatedLoopPipeline"]["syncs"]["verdict"] == "checked"
    notes = {row.pipeline: row.note for row in table.rows([], Coverage.from_dict(doc["census"]))}
    assert notes["DeprecatedLoopPipeline"] == "deprecated" and notes["CleanLoopPipeline"] == ""
    targets = {t["target"]: t["metrics"]["pipeline"] for t in doc["tests"]}
    assert targets["test_loop::LoopTesterConfig::CleanLoopPipeline"] == "CleanLoopPipeline"
    steps = {t["target"]: t["steps"] for t in doc["tests"]}
    assert steps["test_loop::LoopTesterConfig::SyncingLoopPipeline"] == 2  # its own progress bar's, as a tester's


def test_a_component_no_sibling_builds_is_a_reason_not_a_pass(pytester: pytest.Pytester) -> None:
    class NeedsComponentPipeline(untested_pipelines.LoopPipeline):
        def __init__(self, transformer, scheduler, vocoder) -> None:  # type: ignore[no-untyped-def]
            super().__init__(transformer, scheduler)

    entries = [untested.Exported("LoopPipeline", "loop", untested_pipelines.LoopPipeline),
               untested.Exported("NeedsComponentPipeline", "loop", NeedsComponentPipeline)]  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(untested, "census_exports", lambda pipeline_classes, modules: entries)
        pytester.makepyfile(test_loop=TESTER)
        result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=1)
    assert "needs the component(s) vocoder, which no sibling tester of loop gives" in (result.stdout.str())


def test_a_class_another_module_of_the_family_names_is_not_taken_for_an_untested_one(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_loop=TESTER,
        test_clean="class TestClean:\n    pipeline_class = CleanLoopPipeline\n",  # not collected: -k, a shard, a path
    )
    result = pytester.runpytest("test_loop.py", "--nosync", "--collect-only", "-q", "-p", "no:cacheprovider")
    assert not [line for line in result.outlines if "CleanLoopPipeline" in line]
    assert [line for line in result.outlines if "SyncingLoopPipeline::nosync[syncs]" in line]


def test_a_class_the_other_shard_tests_is_not_taken_for_an_untested_one(pytester: pytest.Pytester) -> None:
    """Two folders of one family, each testing its class, packed into two shards: neither shard checks the other's
    class through a sibling (diffusers' Bria Fibo and Bria Fibo Edit folders, measured on the GPU)."""
    clean = TESTER.replace("= LoopPipeline", "= CleanLoopPipeline").replace("TestLoop", "TestClean")
    clean = "from tests.twins.untested_pipelines import CleanLoopPipeline\n" + clean
    pytester.makepyfile(**{"a/test_loop": TESTER, "b/test_clean": clean})
    collected = []
    for shard in ("1/2", "2/2"):
        result = pytester.runpytest(
            "a", "b", "--nosync", f"--nosync-shard={shard}", "--collect-only", "-q", "-p", "no:cacheprovider"
        )
        collected.append([line for line in result.outlines if "::nosync[syncs]" in line])
    assert sorted(len({line.split("/")[0] for line in lines}) for lines in collected) == [1, 1]  # one folder a shard
    everything = [line for lines in collected for line in lines]
    assert not [line for line in everything if "::CleanLoopPipeline::" in line or "::LoopPipeline::" in line]
    assert [line for line in everything if "TestClean::nosync[syncs]" in line]
    assert [line for line in everything if "TestLoop::nosync[syncs]" in line]


def test_a_node_id_given_keeps_only_the_untested_checks_below_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_loop=TESTER)
    result = pytester.runpytest(
        f"{SIBLING}::nosync[syncs]", "--nosync", "--collect-only", "-q", "-p", "no:cacheprovider"
    )
    assert [line for line in result.outlines if "nosync[" in line] == [f"{SIBLING}::nosync[syncs]"]


def test_the_installed_diffusers_exports_are_listed_with_their_family_and_reasons() -> None:
    exported = {e.name: e for e in untested.exported_pipelines()}
    assert exported["LTXI2VLongMultiPromptPipeline"].family == "ltx"
    assert not exported["LTXI2VLongMultiPromptPipeline"].why_not
    assert exported["AmusedPipeline"].deprecated.startswith("deprecated")  # under pipelines/deprecated/
    assert not exported["AmusedPipeline"].why_not  # tried as any class
    assert exported["FluxModularPipeline"].modular
    assert "DiffusionPipeline" not in exported and "ModularPipeline" not in exported


SHARED_STEPS = """
import torch

from tests.twins.loop_pipeline import Denoiser, LoopPipeline, Scheduler


class AnImg2ImgLoopTesterConfig:  # first by name: the siblings' ties go by it
    pipeline_class = LoopPipeline

    def get_dummy_components(self):
        torch.manual_seed(0)
        return {"transformer": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 4, "strength": 0.5}


class TestAnImg2ImgLoop(AnImg2ImgLoopTesterConfig):
    pass
"""


def test_a_sibling_whose_inputs_make_the_class_raise_gives_way_to_the_next_and_a_wrong_model_is_a_reason(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug twin of the sibling's choice: the first sibling's inputs (a share of the steps) make PickyLoopPipeline
    raise, an error finding that was not its; the next sibling's drive it. A model of another class than the one its
    `__init__` names is a reason, not a build that fails later."""
    picky, other = untested_pipelines.PickyLoopPipeline, untested_pipelines.OtherModelPipeline
    entries = [untested.Exported(cls.__name__, "loop", cls) for cls in (untested_pipelines.LoopPipeline, picky, other)]
    monkeypatch.setattr(untested, "census_exports", lambda pipeline_classes, modules: entries)
    pytester.makepyfile(test_loop=TESTER + SHARED_STEPS)
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=3, skipped=1)
    out = result.stdout.str()
    assert "TestAnImg2ImgLoop::PickyLoopPipeline::nosync[syncs]" in out  # collected under the first by rank
    # two testers of LoopPipeline pass, and PickyLoopPipeline, under the first sibling, through the second
    assert "needs the model(s) transformer (OtherDenoiser), which no sibling tester of loop gives" in out, out
    assert "nosync: 2 of 3 exported pipeline classes checked (1 through a sibling tester); 1 not:" in out, out


def test_a_class_raising_with_every_siblings_inputs_is_counted_with_that_raise_not_a_raised_cell(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug twin: a class needing an input no sibling gives (an inpainting class's mask) raised in every check, a
    `raised` cell of the census that said nothing of the class; it is not checked, with the raise as its reason."""
    masked = untested_pipelines.MaskedLoopPipeline
    entries = [untested.Exported(cls.__name__, "loop", cls) for cls in (untested_pipelines.LoopPipeline, masked)]
    monkeypatch.setattr(untested, "census_exports", lambda pipeline_classes, modules: entries)
    pytester.makepyfile(test_loop=TESTER)
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    out = result.stdout.str()
    line = untested_pipelines.line_of("raises without a mask", masked)
    assert "a plain call raised ValueError: a mask is required at " in out and f"untested_pipelines.py:{line}" in out
    assert "generated" not in out  # its `mask` is no input the census knows how to make: its reason stays
    assert "nosync: 1 of 2 exported pipeline classes checked (0 through a sibling tester); 1 not:" in out, out


def test_a_raise_inside_torch_is_blamed_on_the_class_line_that_called_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug twin: the reason named the innermost frame (`torch/nn/functional.py`), not the pipeline's line an error
    finding blames."""
    shrinking = untested_pipelines.ShrinkingLoopPipeline
    entries = [untested.Exported(cls.__name__, "loop", cls) for cls in (untested_pipelines.LoopPipeline, shrinking)]
    monkeypatch.setattr(untested, "census_exports", lambda pipeline_classes, modules: entries)
    pytester.makepyfile(test_loop=TESTER)
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    out = result.stdout.str()
    line = untested_pipelines.line_of("raises inside torch", shrinking)
    assert "a plain call raised RuntimeError: Input and output sizes should be greater than 0" in out, out
    assert f"at tests/twins/untested_pipelines.py:{line}" in out and "torch/nn/functional.py" not in out, out


def test_the_plan_takes_a_class_a_modular_config_names_for_tested_and_counts_the_rest() -> None:
    class FamilyModularPipeline:  # a ModularPipeline class, as the plan sees one
        pass

    class OtherModularPipeline:
        pass

    class LoneFamilyPipeline:
        pass

    entries = [
        untested.Exported("FamilyModularPipeline", "loop", FamilyModularPipeline, modular=True),
        untested.Exported("OtherModularPipeline", "loop", OtherModularPipeline, modular=True),
        untested.Exported("LoneFamilyPipeline", "lone", LoneFamilyPipeline),
    ]
    planned = untested.plan(entries, [], named_elsewhere={"FamilyModularPipeline"})  # a modular config's
    assert planned.untested == []
    assert planned.reasons == {
        "OtherModularPipeline": untested.MODULAR_UNTESTED,
        "LoneFamilyPipeline": untested.NO_SIBLING,
    }


def test_the_reproducing_command_of_an_untested_class_runs_its_one_check(pytester: pytest.Pytester) -> None:
    """`census raises` gives `pytest "<sibling>" -k "untested and <class>"` (census.upstream): it runs that check."""
    pytester.makepyfile(test_loop=TESTER)
    args = ("-k", "untested and SyncingLoopPipeline", "--nosync", "--nosync-checks=syncs", "-p", "no:cacheprovider")
    result = pytester.runpytest(SIBLING, *args)
    result.assert_outcomes(failed=1)
    assert f"FAILED {SIBLING}::SyncingLoopPipeline::nosync[syncs]" in result.stdout.str()


def test_exports_are_accounted_for_in_a_census_of_diffusers_tests_pipelines_only(tmp_path: Path) -> None:
    """A tester of a diffusers pipeline outside a checkout's tests/pipelines (this repository's own twins) adds no
    untested class to its run."""
    from diffusers import FluxPipeline

    assert CENSUS_EXPORTS([FluxPipeline], [tmp_path / "test_flux.py"]) is None
    checkout = tmp_path / "tests/pipelines/x/test_x.py"
    assert CENSUS_EXPORTS([untested_pipelines.LoopPipeline], [checkout]) is None


def test_an_optional_input_a_class_needs_is_generated_from_the_siblings_its_loop_checked_and_the_note_says_so(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug twin: a class whose `__call__` marks `mask_image` optional but raises without it was counted with that
    raise, never checked; a mask generated from the sibling's inputs (census.generated_inputs) now drives it, its
    per-step sync caught at its line, its clean twin passing, and the row's note names the generated input."""
    from pytest_nosync.census import table
    from pytest_nosync.census.outcomes import Coverage
    from pytest_nosync.findings import Report

    inpaint, clean = untested_pipelines.InpaintLoopPipeline, untested_pipelines.CleanInpaintLoopPipeline
    family = (untested_pipelines.LoopPipeline, inpaint, clean)
    result = _census_with_exports(pytester, monkeypatch, _loop_family(*family), "--nosync-report=report.json")
    result.assert_outcomes(passed=2, failed=1)
    line = untested_pipelines.line_of("syncs per step, given a generated mask", inpaint)
    result.stdout.fnmatch_lines([f"*dtoh_sync*untested_pipelines.py:{line}*step 0 ×1, step 1 ×1*"])
    out = result.stdout.str()
    assert f"FAILED {SIBLING}::InpaintLoopPipeline::nosync[syncs]" in out
    assert "nosync: 3 of 3 exported pipeline classes checked (2 through a sibling tester)" in out, out
    doc = json.loads((pytester.path / "report.json").read_text())
    generated = {t["target"]: t["metrics"].get("generated_inputs") for t in doc["tests"]}
    assert generated["test_loop::LoopTesterConfig::InpaintLoopPipeline"] == ["mask_image"]
    assert generated["test_loop::LoopTesterConfig::CleanInpaintLoopPipeline"] == ["mask_image"]
    assert generated["test_loop::LoopTesterConfig"] is None  # the tester's own class: its own inputs
    rows = table.rows([Report.from_dict(t) for t in doc["tests"]], Coverage.from_dict(doc["census"]))
    notes = {row.pipeline: row.note for row in rows}
    said = "checked with generated input(s) mask_image"
    assert notes["InpaintLoopPipeline"] == notes["CleanInpaintLoopPipeline"] == said
    assert notes["LoopPipeline"] == ""


def test_an_optional_image_or_video_to_start_from_is_given_only_where_the_call_needs_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug twin: a class raising without an input it marks optional got every input the census can make, an image to
    start from among them, and its checks ran that other path (Helios's pyramid was checked video to video). The
    inputs it needs are tried first without an optional image or video: its own path is checked, clean here, where the
    path from an image syncs in every step."""
    starting = untested_pipelines.StartingLoopPipeline
    family = _loop_family(untested_pipelines.LoopPipeline, starting)
    result = _census_with_exports(pytester, monkeypatch, family, "--nosync-report=report.json")
    result.assert_outcomes(passed=2)
    doc = json.loads((pytester.path / "report.json").read_text())
    generated = {t["target"]: t["metrics"].get("generated_inputs") for t in doc["tests"]}
    assert generated["test_loop::LoopTesterConfig::StartingLoopPipeline"] == ["mask_image"]
    from pytest_nosync.census.generated_inputs import fewest_first

    assert fewest_first(starting, ["mask_image", "image"]) == [("mask_image",), ("mask_image", "image")]
    assert fewest_first(starting, ["image"]) == [("image",)]  # the image alone: nothing fewer to try
    assert fewest_first(starting, []) == []  # nothing generated: nothing to try


DEPRECATED = "deprecated (diffusers.pipelines.deprecated)"


def test_a_class_of_a_family_no_tester_tests_is_checked_through_another_familys_tester(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug twin: a class whose family has no tester (diffusers' DDPM, deprecated ones) was counted with no sibling,
    never run; the loop's tester builds it (its components, its models' classes), and its per-step sync is found at
    its line. One whose model no tester builds (a deprecated one here) is counted with both reasons, never passed."""
    u = untested_pipelines
    entries = [
        untested.Exported("LoopPipeline", "loop", u.LoopPipeline),
        untested.Exported("SyncingLoopPipeline", "orphan", u.SyncingLoopPipeline),
        untested.Exported("CleanLoopPipeline", "orphan", u.CleanLoopPipeline),
        untested.Exported("OtherModelPipeline", "deprecated", u.OtherModelPipeline, deprecated=DEPRECATED),
    ]
    result = _census_with_exports(pytester, monkeypatch, entries)
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    line = untested_pipelines.line_of("syncs per step", untested_pipelines.SyncingLoopPipeline)
    result.stdout.fnmatch_lines([f"*dtoh_sync*untested_pipelines.py:{line}*step 0 ×1, step 1 ×1*"])
    assert f"FAILED {SIBLING}::SyncingLoopPipeline::nosync[syncs]" in out
    assert "nosync: 3 of 4 exported pipeline classes checked (2 through a sibling tester); 1 not:" in out, out
    assert (
        f"  1 class(es): {DEPRECATED}, and {untested.NO_SIBLING}, nor one of another family that builds it (the "
        "nearest, LoopPipeline, takes no model(s) transformer (OtherDenoiser)) (e.g. OtherModelPipeline)" in out
    ), out


def _tester_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, pipeline: str) -> type:
    path = tmp_path / f"{name}.py"
    path.write_text(f"from tests.twins.untested_pipelines import *\n\n\nclass Test:\n    pipeline_class = {pipeline}\n")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module.Test


def _two_modules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *orphans: untested.Exported
) -> tuple[type, type, list[untested.Exported], list[Path]]:
    """Two tester modules of other families (test_a's LoopPipeline, test_b's CleanLoopPipeline), their testers, the
    exports (theirs and `orphans`, of families neither tests) and the two modules' paths (the whole selection)."""
    u = untested_pipelines
    a = _tester_module(tmp_path, monkeypatch, "test_a", "LoopPipeline")
    b = _tester_module(tmp_path, monkeypatch, "test_b", "CleanLoopPipeline")
    entries = [
        untested.Exported("LoopPipeline", "a", u.LoopPipeline),
        untested.Exported("CleanLoopPipeline", "b", u.CleanLoopPipeline),
        *orphans,
    ]
    return a, b, entries, [tmp_path / "test_a.py", tmp_path / "test_b.py"]


def test_another_familys_sibling_module_is_the_one_the_whole_selection_chooses_in_every_shard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two modules of other families could build an orphan class: the first by rank (test_a's LoopPipeline, whose
    call it shares) is its one module, in a run of both and in the shard holding test_a; the shard holding only
    test_b (told the whole selection) leaves it to that one, so that no two shards check it (census merge refuses)."""
    u = untested_pipelines
    orphan = untested.Exported("SyncingLoopPipeline", "orphan", u.SyncingLoopPipeline, deprecated=DEPRECATED)
    a, b, entries, both = _two_modules(tmp_path, monkeypatch, orphan)
    whole = untested.plan(entries, [a, b])
    assert [(e.name, e.siblings, e.other_family, e.deprecated) for e in whole.untested] == [
        ("SyncingLoopPipeline", (a,), True, DEPRECATED)
    ]
    assert [e.siblings for e in untested.plan(entries, [a], modules=both).untested] == [(a,)]
    shard_b = untested.plan(entries, [b], modules=both)
    assert shard_b.untested == []
    assert shard_b.reasons["SyncingLoopPipeline"] == f"{DEPRECATED}, and {untested.OTHER_MODULE_ELSEWHERE} (test_a.py)"
    # a run of test_b alone (no selection beyond it) takes the one module it has
    assert {e.name: e.siblings for e in untested.plan(entries, [b]).untested}["SyncingLoopPipeline"] == (b,)


def test_a_testers_own_subclass_of_a_diffusers_class_counts_that_class_as_tested(tmp_path: Path) -> None:
    """diffusers' Cosmos testers name a wrapper their module defines (a dummy safety checker given): the exported
    class it derives from, whose `__call__` the checks run, is tested, not planned through a sibling; a class
    deriving from DiffusionPipeline alone keeps its own name (the twins')."""
    from diffusers import DDPMPipeline

    from pytest_nosync.census.outcomes import tested_class_name

    class DDPMPipelineWrapper(DDPMPipeline):
        pass

    class Tester:
        pipeline_class = DDPMPipelineWrapper

    assert tested_class_name(DDPMPipelineWrapper) == "DDPMPipeline"
    assert tested_class_name(untested_pipelines.CleanLoopPipeline) == "CleanLoopPipeline"
    assert tested_class_name(None) == ""
    entries = [untested.Exported("DDPMPipeline", "ddpm", DDPMPipeline)]
    assert untested.plan(entries, [Tester]).untested == []
    assert "DDPMPipeline" not in untested.plan(entries, [Tester]).reasons
    module = tmp_path / "test_wrapped.py"
    module.write_text(
        "class DDPMPipelineWrapper(DDPMPipeline):\n    pass\n\n\nclass T:\n    pipeline_class = DDPMPipelineWrapper\n"
    )
    assert untested.named_by(module) == {"DDPMPipelineWrapper", "DDPMPipeline"}  # another shard's folder, as text


def test_a_tester_of_a_placeholder_class_is_planned_without_asking_the_placeholder_anything() -> None:
    """Bug twin: diffusers' ConsisID tester names a placeholder class where OpenCV is missing, whose every attribute
    raises ImportError (diffusers' DummyObject metaclass); asking it for `components` took the whole census of
    tests/pipelines down at collection (INTERNALERROR) on a machine without OpenCV."""
    from pytest_nosync.census.outcomes import tested_class_name

    class Placeholder(type):  # as diffusers' DummyObject: any public attribute asks for the missing backend
        def __getattr__(cls, key: str) -> object:
            raise ImportError(f"{cls.__name__} requires the OpenCV library but it was not found")

    class ConsisLikePipeline(metaclass=Placeholder):
        __module__ = "diffusers.utils.dummy_torch_and_transformers_and_opencv_objects"

    class Tester:
        pipeline_class = ConsisLikePipeline

    assert tested_class_name(ConsisLikePipeline) == "ConsisLikePipeline"
    entries = [untested.Exported("ConsisLikePipeline", "consisid", ConsisLikePipeline)]
    assert untested.plan(entries, [Tester]).untested == []


def test_components_and_required_inputs_no_sibling_gives_are_made_its_loop_checked_and_the_note_says_so(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug twin: a class requiring a second scheduler of a class it names, a model derived from its denoiser and a
    second expert (diffusers' SD upscaler, SDXL ControlNet Union, Wan 2.2), or a call requiring an example image,
    was counted with "needs the component(s)" / "requires the input(s)", never checked; the census now makes them
    from the sibling's (census.generated_components, census.generated_inputs), each per-step sync caught at its
    line, the clean twin passing, the row's note naming what was made."""
    from pytest_nosync.census.outcomes import Coverage
    from pytest_nosync.findings import Report
    from tests.twins import loop_pipeline

    made, clean = untested_pipelines.MadeComponentsLoopPipeline, untested_pipelines.CleanMadeComponentsLoopPipeline
    example = untested_pipelines.ExampleLoopPipeline
    family = (untested_pipelines.LoopPipeline, made, clean, example)
    result = _census_with_exports(pytester, monkeypatch, _loop_family(*family), "--nosync-report=report.json")
    result.assert_outcomes(passed=2, failed=2)
    line = untested_pipelines.line_of("syncs per step, with made components", made)
    result.stdout.fnmatch_lines([f"*dtoh_sync*untested_pipelines.py:{line}*step 0 ×1, step 1 ×1*"])
    early = loop_pipeline.line_of("read before the denoiser")
    result.stdout.fnmatch_lines([f"*dtoh_sync*loop_pipeline.py:{early}*step 0 ×1, step 1 ×1*"])
    out = result.stdout.str()
    assert f"FAILED {SIBLING}::MadeComponentsLoopPipeline::nosync[syncs]" in out
    assert f"FAILED {SIBLING}::ExampleLoopPipeline::nosync[syncs]" in out
    assert "nosync: 4 of 4 exported pipeline classes checked (3 through a sibling tester)" in out, out
    doc = json.loads((pytester.path / "report.json").read_text())
    rows = table.rows([Report.from_dict(t) for t in doc["tests"]], Coverage.from_dict(doc["census"]))
    notes = {row.pipeline: row.note for row in rows}
    built = (
        "built with generated component(s) low_res_scheduler: DDPMScheduler of its default config; controlnet: "
        "DerivedDenoiser.from_transformer(the sibling's transformer); transformer_2: a second Denoiser of the "
        "sibling's transformer's config"
    )
    assert notes["MadeComponentsLoopPipeline"] == notes["CleanMadeComponentsLoopPipeline"] == built
    assert notes["ExampleLoopPipeline"] == "checked with generated input(s) example_image"


def test_a_siblings_scheduler_of_another_class_is_replaced_only_where_the_class_raised_with_it() -> None:
    """A class naming its own scheduler class keeps the sibling's of another class (most run with it); the annotated
    one is made only when asked (census.untested asks after a raise), of its default config; a scheduler the class
    lacks is made from the sibling's config where that is a diffusers scheduler."""
    from diffusers import DDIMScheduler, DDPMScheduler, PNDMScheduler

    from pytest_nosync.census import generated_components

    Upscaling = untested_pipelines.TwoSchedulersPipeline
    given = {"scheduler": DDIMScheduler(num_train_timesteps=40)}
    made = generated_components.generated(Upscaling, given)
    assert list(made) == ["low_res_scheduler"]
    scheduler, how = made["low_res_scheduler"]
    assert isinstance(scheduler, DDPMScheduler) and scheduler.config.num_train_timesteps == 40
    assert how == "DDPMScheduler from the sibling scheduler's config"
    replaced = generated_components.generated(Upscaling, given, replace_schedulers=True)
    assert isinstance(replaced["scheduler"][0], PNDMScheduler)
    assert replaced["scheduler"][1] == "PNDMScheduler of its default config"
    assert generated_components.makeable(Upscaling, "low_res_scheduler", untested_pipelines.LoopPipeline)
    assert not generated_components.makeable(Upscaling, "low_res_scheduler", type("NoScheduler", (), {}))


def test_a_scheduler_whose_class_refuses_the_siblings_schedule_is_made_of_its_default_config() -> None:
    """UnCLIP's scheduler takes one schedule: made from a sibling's scaled-linear config it raised, which took the
    census item down with a traceback; it is made of its own default config instead (a real diffusers class)."""
    from pytest_nosync.census import generated_components

    class UnCLIPLoopPipeline(untested_pipelines.LoopPipeline):
        def __init__(self, transformer: Denoiser, scheduler: Scheduler, super_res_scheduler: UnCLIPScheduler) -> None:
            super().__init__(transformer, scheduler)

    sibling = DDIMScheduler(beta_schedule="scaled_linear")
    with pytest.raises(ValueError, match="squaredcos_cap_v2"):
        UnCLIPScheduler.from_config(sibling.config)
    made = generated_components.generated(UnCLIPLoopPipeline, {"scheduler": sibling})
    scheduler, how = made["super_res_scheduler"]
    assert isinstance(scheduler, UnCLIPScheduler) and how == "UnCLIPScheduler of its default config"
    linear = generated_components.generated(UnCLIPLoopPipeline, {"scheduler": DDIMScheduler()})
    assert linear["super_res_scheduler"][1] == "UnCLIPScheduler from the sibling scheduler's config"


class NeedyScheduler(SchedulerMixin, ConfigMixin):
    """A scheduler class whose default config cannot be built: `NeedyScheduler()` raises TypeError."""

    @register_to_config
    def __init__(self, stages: int) -> None:
        super().__init__()


class NeedyLoopPipeline(untested_pipelines.LoopPipeline):
    def __init__(self, transformer: Denoiser, scheduler: Scheduler, stage_scheduler: NeedyScheduler) -> None:
        super().__init__(transformer, scheduler)


def test_a_component_no_maker_can_make_stays_missing_rather_than_raising_out_of_the_build() -> None:
    """Bug twin: a scheduler class whose default config cannot be built raised out of the component maker, and the
    check took the raise for the pipeline's (an `error` finding); it stays missing, and the class's own construction
    then says why (its reason)."""
    from pytest_nosync.census import generated_components

    with pytest.raises(TypeError):
        NeedyScheduler()
    made = generated_components.generated(NeedyLoopPipeline, {"scheduler": Scheduler()})
    assert "stage_scheduler" not in made
    assert "stage_scheduler" in generated_components._annotated(NeedyLoopPipeline)  # it was tried


def test_a_class_requiring_an_onnx_runtime_model_is_counted_with_why_nothing_built(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """diffusers' ONNX Stable Diffusion classes run their models on ONNX Runtime: no sibling's torch model stands in
    for one, nor is one made; the class is counted with that reason, never passed."""
    family = (untested_pipelines.LoopPipeline, untested_pipelines.OnnxLoopPipeline)
    result = _census_with_exports(pytester, monkeypatch, _loop_family(*family))
    result.assert_outcomes(passed=1, skipped=1)
    assert "its model(s) transformer run on ONNX Runtime, not torch: nothing to check" in result.stdout.str()


def test_made_models_are_seeded_the_runs_random_stream_untouched_and_a_union_controlnet_sized_to_its_unet() -> None:
    """The same weights every build, the global RNG as it was; diffusers' ControlNetUnionModel.from_unet keeps its
    control-type transformer at SDXL's 320 channels, which a tester's tiny UNet (32) does not match: resized to the
    UNet's first block (census.tiny_models), its forward runs."""
    import torch
    from diffusers import ControlNetUnionModel, UNet2DConditionModel

    from pytest_nosync.census import generated_components

    made = untested_pipelines.MadeComponentsLoopPipeline
    given = {"transformer": untested_pipelines.Denoiser(), "scheduler": untested_pipelines.Scheduler()}
    torch.manual_seed(123)
    state = torch.random.get_rng_state()
    first = generated_components.generated(made, given)
    assert torch.equal(torch.random.get_rng_state(), state)
    second = generated_components.generated(made, given)
    assert torch.equal(first["transformer_2"][0].linear.weight, second["transformer_2"][0].linear.weight)

    class Union:
        def __init__(self, unet: UNet2DConditionModel, controlnet: ControlNetUnionModel) -> None: ...

    unet = UNet2DConditionModel(
        block_out_channels=(32, 64),
        layers_per_block=1,
        sample_size=16,
        in_channels=4,
        out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=64,
        attention_head_dim=(2, 4),
        norm_num_groups=8,
        addition_embed_type="text_time",
        addition_time_embed_dim=8,
        projection_class_embeddings_input_dim=80,
        transformer_layers_per_block=(1, 2),
    )  # fmt: skip  (an SDXL UNet as diffusers' ControlNet SDXL testers build it)
    Union.__init__.__annotations__ = {"unet": UNet2DConditionModel, "controlnet": ControlNetUnionModel}
    controlnet, how = generated_components.generated(Union, {"unet": unet})["controlnet"]
    assert how == "ControlNetUnionModel.from_unet(the sibling's unet)"
    assert controlnet.config.num_trans_channel == controlnet.config.num_proj_channel == 32
    assert ControlNetUnionModel.from_unet(unet).config.num_trans_channel == 320  # diffusers' own, unsized


def _orphans() -> list[untested.Exported]:
    u = untested_pipelines
    return [*_loop_family(u.LoopPipeline), *(untested.Exported(c.__name__, "orphan", c, deprecated=DEPRECATED)
            for c in (u.OrphanSyncingPipeline, u.OrphanCleanPipeline))]  # fmt: skip


def test_a_family_no_module_tests_is_checked_through_its_stand_in_tester_under_the_nearest_module(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A family diffusers tests in no module (its deprecated pipelines), of a model class no tester of the run builds:
    its classes are checked through a stand-in tester written for it (census.standin_testers), collected under the
    nearest module's tester; the syncing class caught at its line, its clean sibling passing, the row named by the
    stand-in."""
    from pytest_nosync.census import standin_testers

    monkeypatch.setattr(standin_testers, "TESTERS", (untested_pipelines.OrphanStandIn,))
    result = _census_with_exports(pytester, monkeypatch, _orphans(), "--nosync-report=report.json")
    result.assert_outcomes(passed=2, failed=1)
    line = untested_pipelines.line_of("syncs per step", untested_pipelines.SyncingLoopPipeline)
    result.stdout.fnmatch_lines([f"*dtoh_sync*untested_pipelines.py:{line}*step 0 ×1, step 1 ×1*"])
    assert f"FAILED {SIBLING}::OrphanSyncingPipeline::nosync[syncs]" in result.stdout.str()
    assert "nosync: 3 of 3 exported pipeline classes checked (2 through a sibling tester, 2 deprecated)" in (
        result.stdout.str()
    )
    doc = json.loads((pytester.path / "report.json").read_text())
    targets = {t["target"]: t["passed"] for t in doc["tests"]}
    assert targets == {
        "test_loop::LoopTesterConfig": True,
        "untested_pipelines::OrphanStandIn::OrphanSyncingPipeline": False,
        "untested_pipelines::OrphanStandIn::OrphanCleanPipeline": True,
    }
    reports = [Report.from_dict(t) for t in doc["tests"]]
    notes = {row.pipeline: row.note for row in table.rows(reports, Coverage.from_dict(doc["census"]))}
    assert notes["OrphanCleanPipeline"] == "deprecated; through the stand-in tester untested_pipelines::OrphanStandIn"
    assert notes["LoopPipeline"] == ""


def test_without_its_stand_in_the_orphan_family_keeps_its_reason(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same run without the stand-in: no tester builds the orphans, counted with that reason, never passed."""
    from pytest_nosync.census import standin_testers

    monkeypatch.setattr(standin_testers, "TESTERS", ())
    result = _census_with_exports(pytester, monkeypatch, _orphans())
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*1 of 3 exported pipeline classes checked*", "*2 class(es): deprecated*"])


def test_a_stand_in_whose_call_takes_its_preludes_results_is_checked_with_them(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DiffEdit's call takes the mask its `generate_mask` makes and the latents its `invert` makes: the census runs
    both once, with the stand-in's inputs for them, before the plain call that picks the stand-in and before the
    checked calls, and gives their results to every call; the call's steps are those it was inverted over (another
    count raises), enough for the check. Without them its plain call raised and the class was not checked."""
    from pytest_nosync.census import standin_testers

    u = untested_pipelines
    monkeypatch.setattr(standin_testers, "TESTERS", (u.EditStandIn,))
    entries = [*_loop_family(u.LoopPipeline), untested.Exported("EditLoopPipeline", "orphan", u.EditLoopPipeline)]
    result = _census_with_exports(pytester, monkeypatch, entries, "--nosync-report=report.json")
    result.assert_outcomes(passed=2)
    assert "nosync: 2 of 2 exported pipeline classes checked" in result.stdout.str()
    tests = json.loads((pytester.path / "report.json").read_text())["tests"]
    steps = {t["target"]: t["steps"] for t in tests}
    assert steps["untested_pipelines::EditStandIn::EditLoopPipeline"] == u.EditStandIn.steps


def test_a_stand_in_of_the_class_itself_comes_first_and_a_run_sibling_keeps_its_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stand-in tester of a class goes before the run's testers of its family; those of its family's other classes
    after them, so that a class a tester builds keeps its row; a class only stand-ins build is hosted by the nearest
    module's tester."""
    u = untested_pipelines
    Tester = _tester_module(tmp_path, monkeypatch, "test_a", "LoopPipeline")

    class SyncingStandIn(u.OrphanStandIn):
        pipeline_class = u.SyncingLoopPipeline

    entries = [*_loop_family(u.LoopPipeline, u.SyncingLoopPipeline, u.CleanLoopPipeline), *_orphans()[1:]]
    planned = untested.plan(entries, [Tester], standins=(SyncingStandIn, u.OrphanStandIn))
    got = {e.name: (e.siblings, e.parent, e.standins) for e in planned.untested}
    assert got["SyncingLoopPipeline"] == ((SyncingStandIn, Tester), Tester, (SyncingStandIn,))
    assert got["CleanLoopPipeline"] == ((Tester, SyncingStandIn), Tester, (SyncingStandIn,))
    assert got["OrphanSyncingPipeline"] == ((u.OrphanStandIn,), Tester, (u.OrphanStandIn,))
    assert got["OrphanCleanPipeline"] == ((u.OrphanStandIn,), Tester, (u.OrphanStandIn,))


def test_a_controlnet_built_beside_the_siblings_transformer_takes_its_embedders(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Z-Image's ControlNet pipelines require a ZImageControlNetModel no tester builds; diffusers' own
    `from_transformer(controlnet, transformer)` takes a ControlNet of its own beside the transformer: one of the
    transformer's sizes (census.tiny_models.BESIDE, the inpainting class's Union 2.0 layout), given its embedders.
    Without that entry it stays missing, the class keeps its reason."""
    from diffusers import ZImageControlNetModel, ZImageControlNetPipeline, ZImageTransformer2DModel

    from pytest_nosync.census import generated_components, tiny_models

    transformer = ZImageTransformer2DModel(
        all_patch_size=(2,),
        all_f_patch_size=(1,),
        in_channels=16,
        dim=32,
        n_layers=2,
        n_refiner_layers=1,
        n_heads=2,
        n_kv_heads=2,
        cap_feat_dim=16,
        axes_dims=[8, 4, 4],
        axes_lens=[256, 32, 32],
    )  # the Z-Image tester's sizes
    made = generated_components.generated(ZImageControlNetPipeline, {"transformer": transformer})
    controlnet, how = made["controlnet"]
    assert how == "ZImageControlNetModel.from_transformer(the sibling's transformer)"
    assert isinstance(controlnet, ZImageControlNetModel) and controlnet.t_embedder is transformer.t_embedder
    assert controlnet.config.dim == 32 and controlnet.config.control_in_dim == 33
    assert generated_components.makeable(ZImageControlNetPipeline, "controlnet", ZImageControlNetPipeline)
    monkeypatch.delitem(tiny_models.BESIDE, "ZImageControlNetModel")
    assert "controlnet" not in generated_components.generated(ZImageControlNetPipeline, {"transformer": transformer})


def test_a_model_the_class_feeds_more_channels_is_the_siblings_of_its_config_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A class concatenating more channels into the denoiser than its sibling's pipeline (CogView4's control pipeline:
    the control latents beside the latents) takes the sibling's model rebuilt of its config changed, seeded
    (census.fitted_models, keyed by the class); without an entry the sibling's model is taken as it is."""
    from diffusers import CogView4Transformer2DModel

    from pytest_nosync.census import fitted_models, generated_components

    class CogView4ControlPipeline:  # the name the entry is keyed by; the annotations of a control pipeline
        def __init__(self, transformer: CogView4Transformer2DModel, scheduler: Scheduler) -> None: ...

    CogView4ControlPipeline.__init__.__annotations__ = {"transformer": CogView4Transformer2DModel}
    transformer = CogView4Transformer2DModel(
        patch_size=2, in_channels=4, num_layers=1, attention_head_dim=4, num_attention_heads=4, out_channels=4,
        text_embed_dim=32, time_embed_dim=8, condition_dim=4,
    )  # fmt: skip
    given = {"transformer": transformer, "scheduler": Scheduler()}
    made, how = generated_components.generated(CogView4ControlPipeline, given)["transformer"]
    assert (made.config.in_channels, made.config.out_channels, made.config.num_layers) == (8, 4, 1)
    assert how == "the sibling's transformer with in_channels 4 → 8, out_channels 4 → 4"
    again, _ = generated_components.generated(CogView4ControlPipeline, given)["transformer"]
    assert all(torch.equal(a, b) for a, b in zip(made.state_dict().values(), again.state_dict().values(), strict=True))
    other = {"transformer": untested_pipelines.Denoiser(), "scheduler": Scheduler()}  # a config without in_channels
    assert generated_components.generated(CogView4ControlPipeline, other) == {}
    monkeypatch.delitem(fitted_models.FITTED, "CogView4ControlPipeline")
    assert generated_components.generated(CogView4ControlPipeline, given) == {}


def test_a_model_or_processor_no_sibling_gives_is_built_tiny_seeded_and_sized_to_the_siblings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bug twin: HunyuanVideo 1.5's image-to-video class requires a SigLIP tower and its processor, Z-Image Omni a
    SigLIP 2 pair, HunyuanImage's refiner a VAE of its own class; no sibling tester gives them in any form, and each
    class was counted with "needs the component(s)". They are built tiny in code by their class's name
    (census.made_models), seeded, the run's random stream untouched, a tower as wide as the transformer embeds its
    features (what the pipelines read), taking what its processor gives; the refiner's VAE latents a quarter of the
    transformer's input. A component whose class no entry builds stays missing: the class keeps its reason."""
    import PIL.Image
    import transformers
    from diffusers import (
        AutoencoderKLHunyuanImageRefiner,
        ConfigMixin,
        HunyuanImageRefinerPipeline,
        HunyuanVideo15ImageToVideoPipeline,
        ModelMixin,
        ZImageOmniPipeline,
    )
    from diffusers.configuration_utils import register_to_config
    from transformers.utils.import_utils import DummyObject

    from pytest_nosync.census import generated_components, made_models

    class Sizes(ModelMixin, ConfigMixin):  # the transformer's sizes the classes read
        @register_to_config
        def __init__(self, in_channels: int = 8, image_embed_dim: int = 12, siglip_feat_dim: int = 24) -> None:
            super().__init__()

    given = {"transformer": Sizes()}
    torch.manual_seed(123)
    state = torch.random.get_rng_state()
    made = {}
    for pipeline in (HunyuanVideo15ImageToVideoPipeline, ZImageOmniPipeline, HunyuanImageRefinerPipeline):
        made.update(generated_components.generated(pipeline, given))
    assert torch.equal(torch.random.get_rng_state(), state)
    image = PIL.Image.new("RGB", (24, 20), "white")
    tower, how = made["image_encoder"]
    assert isinstance(tower, transformers.SiglipVisionModel) and how == "a tiny SiglipVisionModel built in code"
    processor = made["feature_extractor"][0]
    assert tower(**processor(images=image, return_tensors="pt")).last_hidden_state.shape[-1] == 12
    tower2, processor2 = made["siglip"][0], made["siglip_processor"][0]
    assert isinstance(tower2, transformers.Siglip2VisionModel)
    assert tower2(**processor2(images=[image], return_tensors="pt")).last_hidden_state.shape[-1] == 24
    vae, how = made["vae"]
    assert isinstance(vae, AutoencoderKLHunyuanImageRefiner) and vae.config.latent_channels == 2
    assert how == "a tiny AutoencoderKLHunyuanImageRefiner built in code"
    again = generated_components.generated(HunyuanVideo15ImageToVideoPipeline, given)["image_encoder"][0]
    assert all(torch.equal(a, b) for a, b in zip(tower.state_dict().values(), again.state_dict().values(), strict=True))
    assert generated_components.makeable(HunyuanVideo15ImageToVideoPipeline, "image_encoder", ZImageOmniPipeline)

    # transformers' stand-in for a processor whose backend is not installed is built of the one installed
    placeholder = DummyObject("Siglip2ImageProcessor", (), {"_backends": ["torchvision"]})
    assert made_models._backed(placeholder) is transformers.Siglip2ImageProcessorPil

    class Wider(HunyuanVideo15ImageToVideoPipeline):  # a tower no entry builds
        def __init__(self, transformer: Sizes, image_encoder: transformers.CLIPVisionModelWithProjection) -> None: ...

    Wider.__init__.__annotations__ = {"transformer": Sizes, "image_encoder": transformers.CLIPVisionModelWithProjection}
    assert "image_encoder" not in generated_components.generated(Wider, given)
    assert not generated_components.makeable(Wider, "image_encoder", ZImageOmniPipeline)
    assert untested._lack_of(Wider, untested_pipelines.LoopPipeline) == "takes no image_encoder"
    monkeypatch.delitem(made_models.MADE, "SiglipVisionModel")
    assert "image_encoder" not in generated_components.generated(HunyuanVideo15ImageToVideoPipeline, given)
    assert not generated_components.makeable(HunyuanVideo15ImageToVideoPipeline, "image_encoder", ZImageOmniPipeline)


def test_the_image_refiner_takes_the_siblings_transformer_over_frames_beside_its_built_vae(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """HunyuanImage's refiner denoises 5D latents of one frame, its image's latents beside them, with a transformer
    of the sibling's class: the sibling's 2D one raised at its rotary embedding. It is the sibling's rebuilt over
    frames (census.fitted_models), its output the latents' channels, and it runs on what the refiner gives it; the
    refiner's VAE (census.made_models) folds to half of its input. Without the entry the sibling's is taken as it is."""
    from diffusers import HunyuanImageRefinerPipeline, HunyuanImageTransformer2DModel

    from pytest_nosync.census import fitted_models, generated_components

    transformer = HunyuanImageTransformer2DModel(
        in_channels=4, out_channels=4, num_attention_heads=2, attention_head_dim=8, num_layers=1, num_single_layers=1,
        num_refiner_layers=1, patch_size=(1, 1), text_embed_dim=16, rope_axes_dim=(4, 4),
    )  # fmt: skip
    given = {"transformer": transformer}
    made = generated_components.generated(HunyuanImageRefinerPipeline, given)
    fitted, how = made["transformer"]
    assert how == (
        "the sibling's transformer with patch_size (1, 1) → (1, 1, 1), rope_axes_dim (4, 4) → (2, 2, 4), "
        "out_channels 4 → 2"
    )
    vae = made["vae"][0]
    latents = vae.encode(torch.randn(1, 3, 1, 16, 16)).latent_dist.mode()
    folded = 2 * latents.shape[1]  # the refiner's leading frame repeated, two frames stacked along the channels
    assert folded == fitted.config.in_channels // 2
    hidden = torch.randn(1, 2 * folded, 1, *latents.shape[-2:])
    with torch.no_grad():
        out = fitted(hidden, torch.tensor([500.0]), torch.randn(1, 3, 16), torch.ones(1, 3), return_dict=False)[0]
    assert out.shape == (1, folded, 1, *latents.shape[-2:])
    monkeypatch.delitem(fitted_models.FITTED, "HunyuanImageRefinerPipeline")
    assert "transformer" not in generated_components.generated(HunyuanImageRefinerPipeline, given)


def test_a_class_only_stand_ins_build_is_hosted_by_one_module_in_every_shard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The module hosting a class only stand-ins build is chosen from the whole selection (the nearest by rank, here
    test_a's LoopPipeline), so that the shard without it leaves the class to the shard with it (census merge refuses a
    class in two shards), and a run of test_b alone hosts it there."""
    u = untested_pipelines
    a, b, entries, both = _two_modules(tmp_path, monkeypatch, *_orphans()[1:])
    shard_a = untested.plan(entries, [a], modules=both, standins=(u.OrphanStandIn,))
    assert {e.name: (e.siblings, e.parent) for e in shard_a.untested} == {
        "OrphanSyncingPipeline": ((u.OrphanStandIn,), a),
        "OrphanCleanPipeline": ((u.OrphanStandIn,), a),
    }
    shard_b = untested.plan(entries, [b], modules=both, standins=(u.OrphanStandIn,))
    assert shard_b.untested == []
    assert shard_b.reasons["OrphanCleanPipeline"] == f"{DEPRECATED}, and {untested.OTHER_MODULE_ELSEWHERE} (test_a.py)"
    alone = untested.plan(entries, [b], standins=(u.OrphanStandIn,))
    hosts = {e.name: e.parent for e in alone.untested}
    assert (hosts["OrphanSyncingPipeline"], hosts["OrphanCleanPipeline"]) == (b, b)


def test_ltx2s_latent_upsampler_and_diffusion_decoder_are_made_in_the_siblings_latent_space() -> None:
    """Bug twin: LTX-2's latent upsample and diffusion decode classes were counted with "needs the component(s)
    latent_upsampler / diffusion_decoder, which no sibling tester of ltx2 gives". Both are built tiny by their class's
    name (census.made_models) in the sibling VAE's latent space: the upsampler takes its channels and doubles the
    size; the decoder decodes its latents at its compression."""
    from diffusers import AutoencoderKLLTX2Video, LTX2LatentUpsamplePipeline, LTX2VideoDiffusionDecodePipeline

    from pytest_nosync.census import generated_components

    torch.manual_seed(0)
    vae = AutoencoderKLLTX2Video(
        latent_channels=4, block_out_channels=(8,), decoder_block_out_channels=(8,), layers_per_block=(1, 1),
        decoder_layers_per_block=(1, 1), spatio_temporal_scaling=(True,), decoder_spatio_temporal_scaling=(True,),
        decoder_inject_noise=(False, False), downsample_type=("spatial",), upsample_residual=(False,),
        upsample_factor=(1,), timestep_conditioning=False, patch_size=1, patch_size_t=1,
        encoder_causal=True, decoder_causal=False,
    )  # fmt: skip
    upsampler = generated_components.generated(LTX2LatentUpsamplePipeline, {"vae": vae})["latent_upsampler"][0]
    latents = torch.randn(1, 4, 2, 4, 4)
    with torch.no_grad():
        assert upsampler(latents).shape == (1, 4, 2, 8, 8)
    made = generated_components.generated(LTX2VideoDiffusionDecodePipeline, {"vae": vae})
    decoder = made["diffusion_decoder"][0]
    assert decoder.config.latent_channels == 4
    assert decoder.config.spatial_compression_ratio == vae.spatial_compression_ratio


def test_a_class_only_slow_tests_name_is_untested_and_its_stand_in_drives_it(tmp_path: Path) -> None:
    """Bug twin: Flux Redux's prior is named by one test class, a slow one loading the released repository (no dummy
    components): the census took it for tested and checked it nowhere ("no check of it ran"). A class only slow or
    nightly test classes name is untested; its stand-in tester is its first sibling."""
    from pytest_nosync.census import standin_testers, untested

    module = tmp_path / "test_redux.py"
    module.write_text(
        "@slow\n@require_big_accelerator\nclass ReduxSlowTests(unittest.TestCase):\n"
        "    pipeline_class = FluxPriorReduxPipeline\n    base_pipeline_class = FluxPipeline\n\n\n"
        "@nightly\nclass T:\n    pipeline_class = FluxPipeline\n\n\n"
        "class FluxFastTests(PipelineTesterMixin):\n    pipeline_class = FluxPipeline\n"
    )
    assert untested.named_by(module) == {"FluxPipeline"}  # a fast tester names it too: tested
    entries = [e for e in untested.exported_pipelines() if e.name in ("FluxPipeline", "FluxPriorReduxPipeline")]
    from diffusers import FluxPipeline

    class FluxFastTests:  # the run's Flux tester: the stand-in's host
        pipeline_class = FluxPipeline

    planned = untested.plan(entries, [FluxFastTests], untested.named_by(module), (), standin_testers.TESTERS)
    (entry,) = planned.untested
    assert entry.siblings[0] is standin_testers.flux_redux.FluxPriorReduxStandIn
    regex_only = {"FluxPriorReduxPipeline", "FluxPipeline"}  # what reading `pipeline_class = X` alone named
    assert untested.plan(entries, [FluxFastTests], regex_only, (), standin_testers.TESTERS).untested == []
