"""Modular Diffusers tester configs under the gate (census.modular), on configs written here around a real modular
pipeline (tests/twins/modular_loop.py): one target per config, its loop block's steps checked, a planted sync found
at its line, and what cannot be checked (no stand-in, blocks that cannot be built) counted, never passed."""

from __future__ import annotations

import json

import pytest

from pytest_nosync.census.hub_standins import modular_repos
from tests.twins import modular_loop

CONFIGS = """
import torch
from diffusers.modular_pipelines import ModularPipeline

from tests.twins.modular_loop import LoopBlocks

READ = {read}


class LoopModularTesterConfig:  # diffusers' BaseModularPipelineTesterConfig style
    pipeline_class = ModularPipeline
    pipeline_blocks_class = LoopBlocks
    pretrained_model_name_or_path = "{repo}"

    def get_generator(self, seed=0):
        return torch.Generator("cpu").manual_seed(seed)

    def get_dummy_inputs(self, seed=0):
        generator = self.get_generator(seed)
        return {{"latents": torch.randn(2, 8, generator=generator), "num_inference_steps": 2, "read_early": READ}}

    def get_pipeline(self, components_manager=None, dtype=torch.float32):  # diffusers' tester mixin's, the repo's
        pipeline = self.pipeline_blocks_class().init_pipeline(
            self.pretrained_model_name_or_path, components_manager=components_manager
        )
        pipeline.load_components(dtype=dtype)
        return pipeline


class TestLoopModularPipelineFast(LoopModularTesterConfig):
    def test_own(self):
        pass


class TestLoopModularPipelineAgain(LoopModularTesterConfig):  # the same config: its checks are the first class's
    def test_own_too(self):
        pass
"""

BROKEN = """
import torch
from diffusers.modular_pipelines import ModularPipeline, SequentialPipelineBlocks


class Unbuildable(SequentialPipelineBlocks):
    def __init__(self):
        raise TypeError("these blocks need a block that is not there")


class TestUnbuildableModular:
    pipeline_class = ModularPipeline
    pipeline_blocks_class = Unbuildable
    pretrained_model_name_or_path = "{repo}"

    def get_dummy_inputs(self, seed=0):
        return {{}}


class TestRaisingModular:
    pipeline_class = ModularPipeline
    pipeline_blocks_class = __import__("tests.twins.modular_loop").twins.modular_loop.LoopBlocks
    pretrained_model_name_or_path = "{repo}"

    def get_dummy_inputs(self, seed=0):
        return {{"latents": torch.randn(2, 8), "num_inference_steps": 2, "fail": True}}
"""

REPO = "nosync-twins/tiny-loop-modular"


@pytest.fixture(autouse=True)
def _standin(monkeypatch: pytest.MonkeyPatch) -> None:
    """The twins' repository has a stand-in, as the modular Flux repository has one; any other has none."""
    monkeypatch.setitem(modular_repos.MODULAR_STANDINS, REPO, modular_loop.tiny_components)


@pytest.fixture(autouse=True, scope="module")
def _dynamo_loaded() -> None:
    """Traced once here first, so that pytester's unloading of what a run imported does not re-register dynamo's
    modules with torch (see tests/census/test_tester_classes.py)."""
    import torch

    torch._dynamo.explain(lambda x: x + 1)(torch.ones(2))
    torch._dynamo.reset()


def test_a_modular_config_gets_one_check_per_suite_check_once(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_modular_pipeline_loop=CONFIGS.format(read=False, repo=REPO))
    result = pytester.runpytest("--nosync", "--collect-only", "-q", "-p", "no:cacheprovider")
    checks = [line for line in result.outlines if "nosync[" in line]
    assert checks == [
        f"test_modular_pipeline_loop.py::TestLoopModularPipelineFast::nosync[{check}]"
        for check in ("syncs", "graph_breaks", "alloc_growth", "host_overhead")
    ]


def test_a_clean_modular_loop_passes_every_check_over_its_loop_blocks_steps(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_modular_pipeline_loop=CONFIGS.format(read=False, repo=REPO))
    result = pytester.runpytest("-m", "gpu", "--nosync", "-p", "no:cacheprovider", "--nosync-report=report.json")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["nosync: 4 of 4 checks reached a verdict; 1 of 1 pipeline classes fully checked"])
    doc = json.loads((pytester.path / "report.json").read_text())
    steps = {t["check"]: t["steps"] for t in doc["tests"]}
    # more steps than the test's own 2 where a check needs them: the blocks take num_inference_steps
    assert steps["syncs"] == 2 and steps["alloc_growth"] >= 3, steps
    assert {t["metrics"]["denoiser"] for t in doc["tests"]} == {"transformer"}


@pytest.mark.parametrize("backend", ["auto", "emulate"])  # auto: a GPU's where there is one
def test_a_sync_in_a_modular_loop_step_fails_the_syncs_check_at_its_line(
    pytester: pytest.Pytester, backend: str
) -> None:
    pytester.makepyfile(test_modular_pipeline_loop=CONFIGS.format(read=True, repo=REPO))
    args = ("-m", "gpu", "--nosync", f"--nosync-backend={backend}", "-k", "syncs", "-p", "no:cacheprovider")
    result = pytester.runpytest(*args)
    result.assert_outcomes(failed=1)
    line = modular_loop.line_of("read before the denoiser")
    result.stdout.fnmatch_lines([f"*dtoh_sync*modular_loop.py:{line}*step 0 ×1, step 1 ×1*"])
    assert "FAILED test_modular_pipeline_loop.py::TestLoopModularPipelineFast::nosync[syncs]" in result.stdout.str()


def test_no_stand_in_unbuildable_blocks_are_counted_and_a_raise_in_the_loop_is_an_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_modular_pipeline_nostandin=CONFIGS.format(read=False, repo="nosync-twins/no-such-modular-repo"),
        test_modular_pipeline_broken=BROKEN.format(repo=REPO),
    )
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=2, failed=1)
    out = result.stdout.str()
    assert "0 of 3 checks reached a verdict; 0 of 3 pipeline classes fully checked; 1 raised, 2 not checkable" in out
    assert "the hub repository nosync-twins/no-such-modular-repo has no stand-in" in out
    assert "Unbuildable() raised TypeError: these blocks need a block that is not there" in out
    line = modular_loop.line_of("raises in the modular loop")
    result.stdout.fnmatch_lines([f"*error*modular_loop.py:{line}*step 0*", "*ValueError: the modular loop fails*"])


def test_a_tester_naming_its_get_pipeline_dtype_torch_dtype_is_built_and_checked(pytester: pytest.Pytester) -> None:
    # as diffusers' Cosmos3 distilled config names it; a keyword dtype raised TypeError in its get_pipeline
    configs = CONFIGS.format(read=False, repo=REPO).replace("dtype=torch.float32)", "torch_dtype=torch.float32)")
    configs = configs.replace("load_components(dtype=dtype)", "load_components(dtype=torch_dtype)")
    assert "torch_dtype=torch.float32" in configs
    pytester.makepyfile(test_modular_pipeline_loop=configs)
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "syncs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("repo", "reason"),
    [
        ("hf-internal-testing/tiny-krea2-modular-pipe", "12 fixed text encoder layers"),
        ("hf-internal-testing/tiny-cosmos3-distilled-modular-pipe", "distilled_sigmas"),
        ("hf-internal-testing/tiny-helios-pyramid-modular-pipe", "multi-stage HeliosScheduler"),
        ("hf-internal-testing/tiny-ltx2-5-modular-pipe", "diffusion_decoder"),
    ],
)
def test_a_repository_its_classic_components_do_not_fit_is_not_stood_in_with_its_reason(repo: str, reason: str) -> None:
    with pytest.raises(modular_repos.NoStandIn, match=reason):
        modular_repos.components_for(repo)()


def test_a_stand_in_whose_components_the_blocks_refuse_is_not_checked_with_its_reason(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug twin: components that `update_components` refuses (a misfit stand-in, as Wan Animate's components were for
    Wan Animate 2's blocks) were the pipeline's `error` finding, a failed check; they are the stand-in's: not checked,
    with the reason."""
    misfit = "nosync-twins/misfit-modular-repo"
    monkeypatch.setitem(modular_repos.MODULAR_STANDINS, misfit, lambda: {"scheduler": object()})
    pytester.makepyfile(test_modular_pipeline_misfit=CONFIGS.format(read=False, repo=misfit))
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)
    out = result.stdout.str()
    assert "0 of 1 checks reached a verdict; 0 of 1 pipeline classes fully checked; 1 not checkable" in out, out
    assert f"the stand-in of {misfit} in" in out and "raised ValueError: Cannot create ComponentSpec" in out, out
