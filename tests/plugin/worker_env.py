"""What each xdist worker of a pytester run saw of an environment variable: a test module whose tests write it down,
and the reading of what they wrote."""

from __future__ import annotations

import pytest

_WRITES = """
import os, pytest

@pytest.mark.parametrize("i", range({tests}))
def test_what_a_worker_sees(i, tmp_path_factory):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    root = tmp_path_factory.getbasetemp().parent.parent
    (root / f"{{worker}}-{{i}}.seen").write_text(os.environ.get("{variable}", "-"))
"""


def writing(variable: str, tests: int) -> str:
    """A test module of `tests` tests, each writing the value of `variable` where it runs ("-" when unset)."""
    return _WRITES.format(variable=variable, tests=tests)


def seen(pytester: pytest.Pytester, suffix: str = "seen") -> dict[str, str]:
    """Worker → the value its tests wrote to `<worker>-<test>.<suffix>` (in this pytester run's directory)."""
    return {f.name.split("-")[0]: f.read_text() for f in pytester.path.rglob(f"gw*.{suffix}")}
