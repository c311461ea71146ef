"""ModularPipeline classes no modular config names (census.modular_untested), on a family written here (tests/twins/
modular_untested_pipelines.py) beside the loop's modular config: each built with its own default blocks from the
config's stand-in and inputs, a sync in its loop found at its line, its clean twin passing, and one of a family no
config has counted with its reason, never passed."""

from __future__ import annotations

import json

import pytest

from pytest_nosync import ids
from pytest_nosync.census import modular_untested, untested
from pytest_nosync.census.hub_standins import modular_repos
from tests.census.test_modular_testers import CONFIGS, REPO
from tests.census.test_untested_classes import TESTER
from tests.twins import modular_loop
from tests.twins import modular_untested_pipelines as twins
from tests.twins.loop_pipeline import LoopPipeline

SIBLING = "test_modular_pipeline_loop.py::TestLoopModularPipelineFast"
NAMED_CONFIGS = CONFIGS.format(read=False, repo=REPO).replace(
    "pipeline_class = ModularPipeline",
    "pipeline_class = __import__('tests.twins.modular_untested_pipelines').twins.modular_untested_pipelines"
    ".LoopModularPipeline",
)


@pytest.fixture(autouse=True)
def _family(monkeypatch: pytest.MonkeyPatch) -> None:
    """The twins' repository has a stand-in, and the twins' family is what the installed diffusers exports."""
    monkeypatch.setitem(modular_repos.MODULAR_STANDINS, REPO, modular_loop.tiny_components)
    monkeypatch.setattr(untested, "census_exports", lambda pipeline_classes, modules: twins.exported())


@pytest.fixture(autouse=True, scope="module")
def _dynamo_loaded() -> None:
    """Traced once here first (see tests/census/test_tester_classes.py)."""
    import torch

    torch._dynamo.explain(lambda x: x + 1)(torch.ones(2))
    torch._dynamo.reset()


def test_each_unnamed_modular_class_gets_the_checks_under_its_sibling_config(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_modular_pipeline_loop=NAMED_CONFIGS)
    result = pytester.runpytest("--nosync", "--collect-only", "-q", "-p", "no:cacheprovider")
    checks = [line for line in result.outlines if "nosync[syncs]" in line]
    assert checks == [f"{SIBLING}::nosync[syncs]"] + [
        f"{ids.untested_tester(SIBLING, name)}::nosync[syncs]"
        for name in ("SyncingLoopModularPipeline", "ScaledLoopModularPipeline")  # not the lone one
    ]


def test_an_unnamed_modular_class_is_built_from_its_blocks_a_sync_at_its_line_the_lone_one_counted(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_modular_pipeline_loop=NAMED_CONFIGS)
    args = ("-m", "gpu", "--nosync", "--nosync-backend=emulate", "-k", "nosync and syncs", "-p", "no:cacheprovider")
    result = pytester.runpytest(*args, "--nosync-report=report.json")
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    line = twins.line_of("syncs per step", twins.SyncingLoopDenoiser)
    result.stdout.fnmatch_lines([f"*dtoh_sync*modular_untested_pipelines.py:{line}*step 0 ×1, step 1 ×1*"])
    assert f"FAILED {SIBLING}::SyncingLoopModularPipeline::nosync[syncs]" in out, out
    assert "nosync: 3 of 4 exported pipeline classes checked (2 through a sibling tester); 1 not:" in out, out
    assert (
        "  1 class(es): no modular tester config, classic tester or stand-in tester of its family (lone) in this run "
        "to take components and inputs from (e.g. LoneModularPipeline)" in out
    ), out
    doc = json.loads((pytester.path / "report.json").read_text())
    outcomes = doc["census"]["outcomes"]
    assert outcomes[f"{SIBLING}::ScaledLoopModularPipeline"]["syncs"]["passed"] is True
    targets = {t["target"]: t for t in doc["tests"]}
    scaled = targets["test_modular_pipeline_loop::LoopModularTesterConfig::ScaledLoopModularPipeline"]
    assert scaled["metrics"]["pipeline"] == "ScaledLoopModularPipeline" and scaled["steps"] == 2  # its loop's


def test_a_class_whose_call_raises_with_every_siblings_inputs_is_counted_with_that_raise(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its default blocks' loop raises with the config's inputs: not a `raised` cell, its reason (with the place, and
    the sibling whose repository has no stand-in)."""
    monkeypatch.setattr(twins.ScaledLoopModularPipeline, "default_blocks_name", "FailingBlocks")
    monkeypatch.setattr(twins, "FailingBlocks", _failing_blocks(), raising=False)
    pytester.makepyfile(test_modular_pipeline_loop=NAMED_CONFIGS + NO_STANDIN_CONFIG)
    args = ("-m", "gpu", "--nosync", "-k", "ScaledLoopModularPipeline and syncs", "-p", "no:cacheprovider", "-rs")
    result = pytester.runpytest(*args)
    result.assert_outcomes(skipped=1)
    out = result.stdout.str()
    line = modular_loop.line_of("raises in the modular loop")
    assert (
        "with the components of its sibling TestLoopModularPipelineFast's stand-in and its inputs, a plain call "
        f"raised ValueError: the modular loop fails at tests/twins/modular_loop.py:{line}; 1 other sibling(s) not "
        "built here: the hub repository nosync-twins/no-such-modular-repo has no stand-in" in out
    ), out


def test_a_class_released_in_a_repository_of_its_own_is_built_from_its_stand_in_with_the_siblings_inputs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RELEASED_IN names the repository (the distilled Helios class's): its stand-in's components, not the sibling
    config's, with the config's inputs; here its denoiser syncs, where the config's clean one would pass."""
    released = "nosync-twins/released-scaled-loop"
    monkeypatch.setitem(modular_repos.RELEASED_IN, "ScaledLoopModularPipeline", released)
    monkeypatch.setitem(modular_repos.MODULAR_STANDINS, released, twins.released_components)
    pytester.makepyfile(test_modular_pipeline_loop=NAMED_CONFIGS)
    args = ("-m", "gpu", "--nosync", "--nosync-backend=emulate", "-k", "ScaledLoopModularPipeline and syncs")
    result = pytester.runpytest(*args, "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    line = twins.line_of("syncs in its forward", twins.SyncingDenoiser)
    result.stdout.fnmatch_lines([f"*dtoh_sync*modular_untested_pipelines.py:{line}*step 0 ×1, step 1 ×1*"])
    assert f"FAILED {SIBLING}::ScaledLoopModularPipeline::nosync[syncs]" in result.stdout.str()


NO_STANDIN_CONFIG = """

class TestNoStandInModularPipelineFast(LoopModularTesterConfig):  # a sibling ranked after: its repository has none
    pipeline_blocks_class = LoopBlocks  # a config of its own (the class defining its blocks is the config)
    pretrained_model_name_or_path = "nosync-twins/no-such-modular-repo"
"""


def _failing_blocks() -> type:
    class FailingDenoiser(modular_loop.LoopDenoiser):
        @property
        def inputs(self):  # type: ignore[no-untyped-def]
            names = {"latents": None, "read_early": False, "fail": True}  # the loop's own, failing by default
            return [modular_loop.InputParam(name, default=default) for name, default in names.items()]

    class FailingLoop(modular_loop.DenoiseLoop):
        block_classes = [FailingDenoiser, modular_loop.LoopAfterDenoiser]

    class FailingBlocks(modular_loop.LoopBlocks):
        block_classes = [modular_loop.SetTimesteps, FailingLoop]

    return FailingBlocks


def test_the_plan_counts_a_class_with_no_blocks_and_one_of_a_family_with_no_config() -> None:
    class NoBlocksModularPipeline(twins.ModularPipeline):
        default_blocks_name = "NoSuchBlocks"

    exported = [*twins.exported(), untested.Exported("NoBlocksModularPipeline", "loop", NoBlocksModularPipeline,
                                                     modular=True)]  # fmt: skip
    classic = untested.plan(exported, [], named_elsewhere={"LoopModularPipeline"})
    planned = modular_untested.plan(classic, [], {"LoopModularPipeline"})
    assert planned.untested == []
    assert planned.reasons["NoBlocksModularPipeline"].startswith("its default_blocks_name (NoSuchBlocks) names no")
    assert planned.reasons["LoneModularPipeline"].startswith("no modular tester config, classic tester or stand-in")
    assert "LoopModularPipeline" not in planned.reasons


CLASSIC_LONE = """
import torch

from tests.twins.loop_pipeline import Denoiser, LoopPipeline
from tests.twins.modular_loop import Scheduler


class TestLoneLoop:  # a classic tester of the lone family, whose modular class no config names
    pipeline_class = LoopPipeline

    def get_dummy_components(self):
        torch.manual_seed(0)
        return {"transformer": Denoiser(), "scheduler": Scheduler()}

    def get_dummy_inputs(self, device, seed=0):
        generator = torch.Generator("cpu").manual_seed(seed)
        return {"latents": torch.randn(2, 8, generator=generator), "num_inference_steps": 2, "strength": 1.0}
"""
CLASSIC = "test_lone_loop.py::TestLoneLoop"


@pytest.mark.parametrize("blocks", ["LoopBlocks", "SyncingLoopBlocks"])
def test_a_modular_class_no_config_of_its_family_has_is_built_from_its_classic_testers_components(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, blocks: str
) -> None:
    """Its default blocks, the classic tester's dummy components and the inputs they take: the clean blocks pass, the
    syncing ones fail at their line; the coverage line counts it checked."""
    exported = [*twins.exported(), untested.Exported("LoopPipeline", "lone", LoopPipeline)]
    monkeypatch.setattr(untested, "census_exports", lambda pipeline_classes, modules: exported)
    monkeypatch.setattr(twins.LoneModularPipeline, "default_blocks_name", blocks)
    pytester.makepyfile(test_modular_pipeline_loop=NAMED_CONFIGS, test_lone_loop=CLASSIC_LONE)
    args = ("-m", "gpu", "--nosync", "--nosync-backend=emulate", "-k", "nosync and syncs", "-p", "no:cacheprovider")
    result = pytester.runpytest(*args)
    out = result.stdout.str()
    lone = f"{ids.untested_tester(CLASSIC, 'LoneModularPipeline')}::nosync[syncs]"
    if blocks == "SyncingLoopBlocks":
        result.assert_outcomes(passed=3, failed=2)
        assert f"FAILED {lone}" in out, out
        line = twins.line_of("syncs per step", twins.SyncingLoopDenoiser)
        assert out.count(f"modular_untested_pipelines.py:{line}") >= 2, out  # the lone class's and its sibling's
    else:
        result.assert_outcomes(passed=4, failed=1)
        assert f"FAILED {lone}" not in out, out
    assert "nosync: 5 of 5 exported pipeline classes checked (3 through a sibling tester)" in out, out


def test_a_classic_tester_comes_after_the_configs_of_the_family() -> None:
    class TestLoop:
        pipeline_class = LoopPipeline

    class Config:
        pipeline_class = twins.LoopModularPipeline
        pipeline_blocks_class = twins.LoopBlocks
        pretrained_model_name_or_path = REPO

    exported = [*twins.exported(), untested.Exported("LoopPipeline", twins.FAMILY, LoopPipeline)]
    classic = untested.plan(exported, [TestLoop], named_elsewhere={"LoopModularPipeline", "LoopPipeline"})
    planned = modular_untested.plan(classic, [Config], {"LoopModularPipeline", "LoopPipeline"}, [TestLoop])
    siblings = {entry.name: entry.siblings for entry in planned.untested}
    assert siblings["SyncingLoopModularPipeline"] == (Config, TestLoop)
    assert "LoneModularPipeline" in planned.reasons  # no tester of its family


@pytest.mark.parametrize("blocks", ["LoopBlocks", "SyncingLoopBlocks"])
def test_a_modular_class_whose_family_only_stand_ins_build_is_built_from_the_stand_in_under_its_classics_host(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, blocks: str
) -> None:
    """No config and no collected tester of its family: the stand-in tester its classic class is checked through
    (census.standin_testers) gives its components and inputs, under the same host; its row names the stand-in."""
    from pytest_nosync.census import standin_testers

    exported = [*twins.exported(), untested.Exported("LoopPipeline", "classic", LoopPipeline),
                untested.Exported("LoneLoopPipeline", "lone", twins.LoneLoopPipeline)]  # fmt: skip
    monkeypatch.setattr(untested, "census_exports", lambda pipeline_classes, modules: exported)
    monkeypatch.setattr(standin_testers, "TESTERS", (twins.LoneStandIn,))
    monkeypatch.setattr(twins.LoneModularPipeline, "default_blocks_name", blocks)
    pytester.makepyfile(test_modular_pipeline_loop=NAMED_CONFIGS, test_loop=TESTER)  # another family's: the host
    args = ("-m", "gpu", "--nosync", "--nosync-backend=emulate", "-k", "nosync and syncs", "-p", "no:cacheprovider")
    result = pytester.runpytest(*args, "--nosync-report=report.json")
    out = result.stdout.str()
    lone = f"{ids.untested_tester('test_loop.py::TestLoop', 'LoneModularPipeline')}::nosync[syncs]"
    failed = blocks == "SyncingLoopBlocks"
    result.assert_outcomes(passed=5 - failed, failed=1 + failed)  # the syncing config's class fails in both
    assert (f"FAILED {lone}" in out) is failed, out
    assert "nosync: 6 of 6 exported pipeline classes checked" in out, out
    doc = json.loads((pytester.path / "report.json").read_text())
    standins = {t["metrics"].get("pipeline"): t["metrics"].get("standin") for t in doc["tests"]}
    assert standins["LoneModularPipeline"] == "modular_untested_pipelines::LoneStandIn"
