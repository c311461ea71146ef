"""The diagnosis on traces recorded on an H100 (torch 2.11, diffusers 0.42.1, tiny targets, bf16, eager).

Recorded with `python -m pytest_nosync profile --target flux|wan --mode eager --device cuda --steps 2 --gzip`
(scripts/gpu-validation.sh). What the assertions state was read off those runs and is true of the
pipelines: Flux's steps are sync-free, Wan's UniPC copies host sigmas in every step, and Wan's patch
embedding (a Conv3d) runs cuDNN layout transforms in every step.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_nosync.profiling.diagnose import diagnose
from pytest_nosync.profiling.trace import Trace

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def flux():
    return diagnose(Trace.load(str(DATA / "h100-flux-eager.json.gz"))).to_dict()


@pytest.fixture(scope="module")
def wan():
    return diagnose(Trace.load(str(DATA / "h100-wan-eager.json.gz"))).to_dict()


def test_steps_and_kernels_are_found(flux) -> None:
    steps = flux["steps"]
    assert [s["step"] for s in steps] == [0, 1]
    for step in steps:
        assert step["kernels"] >= 200 and step["compiled_kernels"] == 0
        assert step["denoiser_calls"] == 1
        assert 0.9 < step["gpu_idle_fraction"] < 1.0  # a tiny model on an H100: launch-bound
        names = {r["name"] for r in step["regions"]}
        assert {"transformer_forward", "scheduler_step"} <= names


def test_every_kernel_has_its_launch(flux) -> None:
    delay = flux["launch_delay_us"]
    kernels = sum(s["kernels"] for s in flux["steps"])
    assert delay["count"] >= kernels
    assert 1.0 < delay["median"] < 100.0 and delay["p95"] >= delay["median"]


def test_flux_syncs_are_all_before_the_loop(flux) -> None:
    assert flux["syncs"] and all(s.get("step") is None for s in flux["syncs"])
    assert all(step["syncs"] == 0 for step in flux["steps"])


def test_gaps_name_the_host_work_that_filled_them(flux) -> None:
    gaps = [g for step in flux["steps"] for g in step["gaps"]]
    assert gaps and all(g["ms"] > 0 for g in gaps)
    assert {g["host"]["region"] for g in gaps} <= {"transformer_forward", "scheduler_step", "loop", None}


def test_wan_steps_sync_and_transform_layouts(wan) -> None:
    for step in wan["steps"]:
        assert step["syncs"] >= 2  # UniPC's host sigmas, copied to the device in every step
        assert step["layout_transforms"] >= 6  # cuDNN nchw<->nhwc around the Conv3d patch embedding
