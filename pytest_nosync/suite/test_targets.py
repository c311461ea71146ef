"""The built-in suite: every selected target, with every selected scenario, through each check the suite runs on a
pipeline (one test per check of pytest_nosync.checks.CHECKS, --nosync-checks choosing them) and its step metrics,
each its own test id (`test_syncs[flux]`, `test_syncs[flux-first_block_cache]`).

Runs with `pytest -m gpu --nosync` in this repository, and from anywhere (e.g. a diffusers checkout)
with `pytest -m gpu --nosync --nosync-suite`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_nosync.checks import CHECKS, PIPELINE_CHECKS

pytestmark = pytest.mark.gpu


def _check_test(check: str) -> Callable[..., None]:
    def test(nosync_check: Callable[[str], Any], nosync: Any) -> None:
        nosync.add_report(nosync_check(check))

    test.__name__ = test.__qualname__ = f"test_{check}"
    test.__doc__ = CHECKS[check].help
    return test


# test_syncs, test_graph_breaks, test_alloc_growth, test_host_overhead, test_cudagraphs (opt-in: --nosync-checks)
for _check in PIPELINE_CHECKS:
    globals()[f"test_{_check}"] = _check_test(_check)


def test_step_metrics(nosync_step_metrics, benchmark, nosync) -> None:
    """Device ops, host ms outside the denoiser, device ms and peak memory of each steady step, stored by
    pytest-benchmark (--benchmark-autosave) and judged against a saved run (--benchmark-compare)."""
    nosync.add_report(nosync_step_metrics(benchmark))
