"""A pytest session in a subprocess that several tests read, each its own part: for end-to-end tests whose cost is the
session's interpreters starting (torch and diffusers imported in each), not their assertions. It runs as pytester runs
a subprocess: its directory first on the path and as HOME, no inherited addopts; once per test run, whichever xdist
worker its tests went to (`once`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock


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
    from the environment (which `once` gives the run's cache home)."""
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


def once(
    factory: pytest.TempPathFactory, name: str, start: Callable[[Path], SharedSession], cache_home: Path
) -> SharedSession:
    """The session `start` runs in the directory it is given, once per test run (`made_once`). `cache_home`: where
    the run keeps the hub stand-ins (tests/conftest.py's `shared_cache_home`), as for pytester's sessions."""

    def make(root: Path) -> None:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("XDG_CACHE_HOME", str(cache_home))
            result = start(root).result
        outcome = {"ret": int(result.ret), "out": result.outlines, "err": result.errlines}
        (root / "outcome.json").write_text(json.dumps(outcome))

    root = made_once(factory, name, make)
    outcome = json.loads((root / "outcome.json").read_text())
    return SharedSession(pytest.RunResult(outcome["ret"], outcome["out"], outcome["err"], 0.0), root)


def made_once(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """A directory `make` fills once per test run: xdist hands a module's tests to either worker, and a module-scoped
    fixture would make it in each. The first worker to need it makes it (the other waits on its lock) and leaves it
    for the other to read."""
    run_dir = factory.getbasetemp()
    if "PYTEST_XDIST_WORKER" in os.environ:
        run_dir = run_dir.parent  # the run's, above each worker's own
    root = run_dir / f"shared-{name}"
    with FileLock(f"{root}.lock"):
        done = root / ".made"
        if not done.exists():
            shutil.rmtree(root, ignore_errors=True)  # what a make that raised left behind
            root.mkdir()
            make(root)
            done.touch()
    return root
