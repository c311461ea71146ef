"""The built-in suite: every selected target through the four checks and its step metrics, each its own test id.

Runs with `pytest -m gpu --nosync` in this repository, and from anywhere (e.g. a diffusers checkout)
with `pytest -m gpu --nosync --nosync-suite`.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu


def test_syncs(nosync_check, nosync) -> None:
    """Warm-up call, then ≥2 steps under the sync guard: no sync inside a step."""
    nosync.add_report(nosync_check("syncs"))


def test_graph_breaks(nosync_check, nosync) -> None:
    """dynamo explain of the denoiser on a real step's inputs, and no recompile between compiled steps."""
    nosync.add_report(nosync_check("graph_breaks"))


def test_alloc_growth(nosync_check, nosync) -> None:
    """Steady-state steps (after the scheduler's order) leave no memory behind."""
    nosync.add_report(nosync_check("alloc_growth"))


def test_host_overhead(nosync_check, nosync) -> None:
    """No module-tree walk in a steady-state step; host ms/step reported."""
    nosync.add_report(nosync_check("host_overhead"))


def test_step_metrics(nosync_step_metrics, benchmark, nosync) -> None:
    """Device ops, host ms outside the denoiser, device ms and peak memory of each steady step, stored by
    pytest-benchmark (--benchmark-autosave) and judged against a saved run (--benchmark-compare)."""
    nosync.add_report(nosync_step_metrics(benchmark))
