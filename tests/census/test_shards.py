"""The census beyond one machine (plugin.census_shard, census.shards): a small fake checkout of tester modules in
family folders, packed into shards by recorded durations; bad shards and durations files are one sentence."""

from __future__ import annotations

import json

import pytest

from pytest_nosync.census import shards

TESTER = """
import unittest

import torch

from tests.twins.loop_pipeline import Denoiser, {pipeline}, Scheduler


class {name}(unittest.TestCase):
    pipeline_class = {pipeline}

    def get_dummy_components(self):
        torch.manual_seed(0)
        return {{"{denoiser}": Denoiser(), "scheduler": Scheduler()}}

    def get_dummy_inputs(self, device, seed=0):
        return {{"latents": torch.randn(2, 8), "num_inference_steps": 2, "read_early": {read}}}
"""

# family folder → its modules' tester classes: six modules, one of them of two classes
CHECKOUT = {
    "tests/pipelines/flux/test_flux.py": ["FluxPipelineFastTests"],
    "tests/pipelines/flux/test_flux_img2img.py": ["FluxImg2ImgPipelineFastTests", "FluxInpaintPipelineFastTests"],
    "tests/pipelines/wan/test_wan.py": ["WanPipelineFastTests"],
    "tests/pipelines/wan/test_wan_vace.py": ["WanVACEPipelineFastTests"],
    "tests/pipelines/sana/test_sana.py": ["SanaPipelineFastTests"],
    "tests/pipelines/ltx/test_ltx.py": ["LTXPipelineFastTests"],
}
RUN = ("tests", "-m", "gpu", "--nosync", "--nosync-checks=syncs,alloc_growth", "-p", "no:cacheprovider")


def _checkout(pytester: pytest.Pytester, reading: str = "") -> None:
    """The fake checkout; the tester class `reading` reads a value of the device in its steps (a sync)."""
    for module, classes in CHECKOUT.items():
        path = pytester.path / module
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(TESTER.format(name=name, pipeline=("NetPipeline" if i else "LoopPipeline"),
                                                denoiser=("net" if i else "transformer"), read=name == reading)
                                  for i, name in enumerate(classes)))  # fmt: skip
    pytester.makeini("[pytest]\nmarkers =\n    gpu\n")


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("--nosync-shard=4/3", "--nosync-shard: must be K/N with 1 <= K <= N, got '4/3'"),
        ("--nosync-shard=0/3", "--nosync-shard: must be K/N with 1 <= K <= N, got '0/3'"),
        ("--nosync-shard=half", "--nosync-shard: must be K/N (the K-th of N shards, e.g. 2/8), got 'half'"),
        ("--nosync-durations=notjson.json", "--nosync-durations: the durations file notjson.json is not JSON"),
        ("--nosync-durations=foreign.json", "names no tester class of the selected test modules"),
    ],
)
def test_bad_shards_and_durations_are_one_sentence_before_anything_runs(
    pytester: pytest.Pytester, option: str, said: str
) -> None:
    _checkout(pytester)
    (pytester.path / "notjson.json").write_text("{not json")
    (pytester.path / "foreign.json").write_text(json.dumps({"tests/models/test_unet.py::UNetTests::test_x": 3.0}))
    shard = [] if option.startswith("--nosync-shard") else ["--nosync-shard=1/2"]
    result = pytester.runpytest(*RUN, option, *shard)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert said in result.stderr.str()
    assert "passed" not in result.stdout.str()


def test_packing_is_longest_first_keeps_families_and_gives_the_mean_to_the_unrecorded() -> None:
    modules = ["a/test_1.py", "a/test_2.py", "b/test_3.py", "c/test_4.py", "d/test_5.py"]
    durations = {"a/test_1.py::A::nosync[syncs]": 10.0, "a/test_2.py::B::nosync[syncs]": 10.0,
                 "b/test_3.py::C::nosync[syncs]": 6.0, "c/test_4.py::D::nosync[syncs]": 4.0}  # fmt: skip
    plan = shards.pack(modules, durations, 2)
    # the mean (7.5) for d/test_5.py; family a (20) is above a shard's share (37.5 / 2): its modules go one by one
    # longest first into the lightest (the lower index on a tie): a/test_1 | a/test_2, d → 1, b → 2, c → 2
    assert plan.shards == (("a/test_1.py", "d/test_5.py"), ("a/test_2.py", "b/test_3.py", "c/test_4.py"))
    assert plan.seconds == (17.5, 20.0) and plan.estimated == 1
    assert shards.pack(list(reversed(modules)), dict(reversed(durations.items())), 2) == plan  # whatever the order
    together = shards.pack(modules, durations, 1)
    assert together.shards == (tuple(modules),)
    smaller = {**durations, "a/test_1.py::A::nosync[syncs]": 1.0, "a/test_2.py::B::nosync[syncs]": 2.0}
    three = shards.pack(modules, smaller, 3)  # family a (3 s) within a share (16.25 s / 3): kept whole
    assert [s for s in three.shards if "a/test_1.py" in s] == [s for s in three.shards if "a/test_2.py" in s]
