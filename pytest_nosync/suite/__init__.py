"""The diffusers content of pytest-nosync: targets, the suite's checks and test modules, the shipped baseline.

Its identity, in one place (paths only: importing this package imports nothing else). The core learns from the suite
which of its files are user-facing code, where a finding is blamed (see `user_code`); it does not look for them.
"""

from __future__ import annotations

from pathlib import Path

SUITE_DIR = Path(__file__).resolve().parent
TARGETS_DIR = SUITE_DIR / "targets"
TARGETS_MODULE = SUITE_DIR / "test_targets.py"  # test_<check>[target] and test_step_metrics[target]
SHIPPED_BASELINE = SUITE_DIR / "known-issues.json"


def is_test_module(path: Path) -> bool:
    """One of the suite's test modules (test_*.py), which pytest collects."""
    return path.resolve().parent == SUITE_DIR and path.name.startswith("test_") and path.suffix == ".py"


def user_code(path: str) -> bool:
    """Whether a file of the suite is code a finding is blamed on, like a user's: its test modules and target
    builders. Its harness (checks, regression drivers) is plumbing, like the rest of the plugin."""
    resolved = Path(path)
    return TARGETS_DIR in resolved.parents or is_test_module(resolved)
