"""Budgets on a TraceDiagnosis as findings, and the TraceDiagnosis as text."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_nosync.profiling.budgets import budget_findings
from pytest_nosync.profiling.config import TraceBudgets, parse_budgets
from pytest_nosync.profiling.diagnose import TraceDiagnosis, diagnose
from pytest_nosync.profiling.render import render_diagnosis
from pytest_nosync.profiling.trace import Trace

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def eager() -> TraceDiagnosis:
    return diagnose(Trace.load(str(DATA / "gpu_eager.json")))


def test_no_budget_no_finding(eager: TraceDiagnosis) -> None:
    assert not TraceBudgets().any
    assert budget_findings(eager, TraceBudgets()) == []


def test_gpu_idle_budget_blames_the_place_that_filled_the_largest_gap(eager: TraceDiagnosis) -> None:
    # step 1 idles 94% (the planted sleep); steps 0 and 2 idle 79% and 83%
    findings = budget_findings(eager, TraceBudgets(max_gpu_idle_fraction=0.9))
    (finding,) = findings
    assert (finding.kind, finding.step, str(finding.where), finding.region) == (
        "host_overhead",
        1,
        "pipe.py:80",
        "scheduler_step",
    )
    assert "GPU idle 94% of step 1" in finding.detail and "slow_host_work" in finding.detail
    assert finding.source == "trace"


def test_warmup_steps_are_not_judged(eager: TraceDiagnosis) -> None:
    budgets = TraceBudgets(max_gpu_idle_fraction=0.5)
    assert [f.step for f in budget_findings(eager, budgets)] == [0, 1, 2]
    assert [f.step for f in budget_findings(eager, budgets, warmup_steps=2)] == [2]


def test_host_time_between_denoiser_calls(eager: TraceDiagnosis) -> None:
    (finding,) = budget_findings(eager, TraceBudgets(max_cpu_ms_between_denoiser_calls=1.0))
    assert (finding.kind, finding.step, str(finding.where)) == ("host_overhead", 1, "pipe.py:80")
    assert "3.325 ms of host time between two denoiser calls (budget 1.0 ms)" in finding.detail


def test_layout_and_copy_budgets(eager: TraceDiagnosis) -> None:
    findings = budget_findings(eager, TraceBudgets(max_layout_transforms_per_step=1, max_copies_per_step=3))
    layout = [f for f in findings if f.data["kind"] == "layout transform"]
    copies = [f for f in findings if f.data["kind"] == "device copy"]
    assert [f.step for f in layout] == [0, 1, 2]
    assert [f.step for f in copies] == [1, 2]  # step 0 has 3: within budget
    assert layout[0].kind == "layout_transform" and str(layout[0].where) == "<op aten::conv3d>:0"
    assert "nchwToNhwcKernel via aten::conv3d ×1" in layout[0].detail


def test_parse_budgets_from_options_and_markers() -> None:
    assert parse_budgets(["max_gpu_idle_fraction=0.2", "max_copies_per_step = 3"]) == TraceBudgets(
        max_gpu_idle_fraction=0.2, max_copies_per_step=3
    )
    assert parse_budgets({"max_layout_transforms_per_step": 0}).max_layout_transforms_per_step == 0
    base = TraceBudgets(max_gpu_idle_fraction=0.2, max_copies_per_step=3)
    assert base.merged(TraceBudgets(max_copies_per_step=1)) == TraceBudgets(0.2, None, None, 1)
    for bad, message in [
        (["max_idle=1"], "unknown budget 'max_idle'"),
        (["max_gpu_idle_fraction"], "expected NAME=VALUE"),
        (["max_copies_per_step=1.5"], "must be a whole number"),
        (["max_gpu_idle_fraction=2"], "out of range"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_budgets(bad)


def test_render_names_the_places(eager: TraceDiagnosis) -> None:
    text = render_diagnosis(eager)
    assert text.startswith("trace diagnosis: 3 step(s), GPU activity recorded")
    assert "3.105 ms in step 1" in text and "<built-in function sleep> in slow_host_work() at pipe.py:80" in text
    assert "step 2: dtoh_sync (cudaStreamSynchronize) in aten::item: pipe.py(60): check_nan" in text
    assert "layout transforms in step 0: nchwToNhwcKernel via aten::conv3d ×1" in text
    assert "memory allocated on cuda:0, growth per step: step 0 +0 B" in text and "step 1 +1.0 MiB" in text
    assert len(text.splitlines()) < 40


def test_render_of_a_cpu_only_diagnosis_says_so() -> None:
    text = render_diagnosis(TraceDiagnosis(notes=("no GPU activity in this trace",)))
    assert "CPU only (GPU figures left out" in text and "note: no GPU activity" not in text
    assert "GPU idle" not in text and "launch" not in text
