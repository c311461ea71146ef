"""How the suite runs each check on a pipeline is read from the check's entry (pytest_nosync.checks.CHECKS): the
steps its measured call needs, its warm-up, whether it needs a GPU."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_nosync.option_table import Settings
from pytest_nosync.plugin.usage import check_pipeline_checks
from pytest_nosync.suite.checks import plan


def test_the_measured_call_runs_the_warm_up_then_the_judged_steps_of_the_entry() -> None:
    pipe = SimpleNamespace(scheduler=SimpleNamespace(order=2, config=SimpleNamespace()))  # a second-order scheduler
    assert plan("syncs", pipe, 2) == (2, 1)
    assert plan("host_overhead", pipe, 5) == (5, 1)
    assert plan("cudagraphs", pipe, 2) == (3, 1)  # warmed up, recorded, replayed
    assert plan("alloc_growth", pipe, 2) == (4, 2)  # the scheduler's history filled, then two judged steps


def test_a_check_that_needs_a_gpu_is_a_usage_error_on_another_backend() -> None:
    check_pipeline_checks(Settings(backend="cuda", pipeline_checks=("syncs", "cudagraphs")))
    with pytest.raises(pytest.UsageError, match=r"cudagraphs needs a GPU \(CUDA graphs capture device work\), and the "
                       r"run's backend is emulate"):  # fmt: skip
        check_pipeline_checks(Settings(backend="emulate", pipeline_checks=("syncs", "cudagraphs")))


def test_a_scheduler_whose_length_cannot_be_read_is_planned_as_any_other() -> None:
    """Bug twin: diffusers' DDPMWuerstchenScheduler has a __len__ its config cannot answer (no num_train_timesteps):
    `if scheduler` asked it, and Stable Cascade's three growth checks raised in the plan, a traceback on the H200."""
    from diffusers import DDPMWuerstchenScheduler

    scheduler = DDPMWuerstchenScheduler()
    with pytest.raises(AttributeError):
        len(scheduler)
    assert plan("alloc_growth", SimpleNamespace(scheduler=scheduler), 2) == (3, 1)
