"""A pytest session in a subprocess that several tests read, each its own part: for end-to-end tests whose cost is the
session's interpreters starting (torch and diffusers imported in each), not their assertions. It runs as pytester runs
a subprocess: its directory first on the path and as HOME, no inherited addopts."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class SharedSession:
    result: pytest.RunResult
    path: Path  # where it ran

    def outcomes(self, test: str) -> dict[str, int]:
        """`passed`/`failed` → how many tests whose id contains `test` ended so (read from the `-rA` summary)."""
        words = [line.split()[0].lower() for line in self.result.outlines if " " in line and test in line]
        return dict(Counter(w for w in words if w in ("passed", "failed")))


def run(root: Path, *args: str, first_on_path: Iterable[Path] = (), unset: Iterable[str] = ()) -> SharedSession:
    """`python -m pytest -rA ARGS` in `root`, with `first_on_path` ahead of root on PYTHONPATH and `unset` removed
    from the environment."""
    removed = {"PYTEST_ADDOPTS", *unset}
    env = {k: v for k, v in os.environ.items() if k not in removed}
    path = os.pathsep.join(filter(None, [*map(str, first_on_path), str(root), env.get("PYTHONPATH")]))
    env.update(HOME=str(root), PY_COLORS="0", PYTHONPATH=path)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", f"--basetemp={root / 'basetemp'}", "-rA", *args],
        cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    return SharedSession(
        pytest.RunResult(done.returncode, done.stdout.splitlines(), done.stderr.splitlines(), 0.0), root
    )
