"""The composite GitHub Action (action.yml, action/census_pr.sh): run as a workflow runs it, on a repository of tester
classes whose pull request adds a sync to a scheduler one of them uses, it fails naming that sync at its line, in the
job's summary; a change no tester's code ran passes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]

SCHEDULERS = """
from tests.twins.loop_pipeline import Scheduler


class SteppedHere(Scheduler):
    def step(self, noise, t, latents):
        return latents - 0.1 * noise * t


def never_called():
    return 0
"""

TESTERS = """
import unittest

import torch

from looplib import SteppedHere
from tests.twins.loop_pipeline import Denoiser, LoopPipeline, Scheduler


class SteppedHereFastTests(unittest.TestCase):
    pipeline_class = LoopPipeline

    def get_dummy_components(self):
        torch.manual_seed(0)
        return {"transformer": Denoiser(), "scheduler": SteppedHere()}

    def get_dummy_inputs(self, device, seed=0):
        return {"latents": torch.randn(2, 8), "num_inference_steps": 2}


class SteppedElsewhereFastTests(SteppedHereFastTests):
    def get_dummy_components(self):
        torch.manual_seed(0)
        return {"transformer": Denoiser(), "scheduler": Scheduler()}
"""


def test_the_action_is_a_composite_that_runs_the_script_it_ships() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) == {"base", "paths", "workers", "changed", "install", "python",
                                     "shard", "merge", "shards", "baseline", "durations", "out"}  # fmt: skip
    runs = " ".join(step["run"] for step in action["runs"]["steps"])
    assert '"$GITHUB_ACTION_PATH/action/census_pr.sh"' in runs and '"$GITHUB_ACTION_PATH"' in runs
    assert (ROOT / "action" / "census_pr.sh").exists()


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                   capture_output=True)  # fmt: skip


def _run(repo: Path, out: Path, **more: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        **more,
        "NOSYNC_BASE": "main",
        "NOSYNC_WORKERS": "-k syncs -p no:randomly",
        "NOSYNC_PYTHON": sys.executable,
        "NOSYNC_OUT": str(out),
        "GITHUB_STEP_SUMMARY": str(out / "step-summary.md"),
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
    }
    return subprocess.run(["bash", str(ROOT / "action" / "census_pr.sh")], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A checkout of the diffusers shape: the tester classes under tests/pipelines, beside the scheduler they use (a
    recorded tester's code is its diffusers' and its tests tree's)."""
    repo = tmp_path / "repo"
    (repo / "tests" / "pipelines").mkdir(parents=True)
    (repo / "tests" / "pipelines" / "looplib.py").write_text(SCHEDULERS)
    (repo / "tests" / "pipelines" / "test_loops.py").write_text(TESTERS)
    (repo / ".gitignore").write_text("__pycache__/\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "main")
    _git(repo, "switch", "-q", "-c", "pull-request")
    return repo


@pytest.mark.slow
def test_a_pull_request_that_adds_a_sync_fails_naming_it_in_the_summary(repo: Path, tmp_path: Path) -> None:
    library = repo / "tests" / "pipelines" / "looplib.py"
    library.write_text(SCHEDULERS.replace("return latents - 0.1 * noise * t", "return latents - float(t) * noise"))
    _git(repo, "commit", "-qam", "a host read in the scheduler's step")
    done = _run(repo, tmp_path / "out", NOSYNC_DURATIONS=str(tmp_path / "durations.json"))
    assert done.returncode == 1, done.stdout + done.stderr
    recorded = json.loads((tmp_path / "durations.json").read_text())  # the next gate orders its workers by it
    assert {nodeid.split("::")[1] for nodeid in recorded} == {"SteppedHereFastTests", "SteppedElsewhereFastTests"}
    summary = (tmp_path / "out" / "step-summary.md").read_text()
    assert "1 pipeline classes run in both; **1 got worse**" in summary, summary
    line = SCHEDULERS.splitlines().index("        return latents - 0.1 * noise * t") + 1
    assert f"`tests/pipelines/looplib.py:{line}`" in summary, summary  # the place it added
    assert "1 of 2 pipeline tester classes run: 1 touched by the change" in done.stdout  # the other was not run
    assert f"dtoh_sync tests/pipelines/looplib.py:{line}" in done.stdout


@pytest.mark.slow
def test_a_pull_request_no_testers_code_ran_passes(repo: Path, tmp_path: Path) -> None:
    library = repo / "tests" / "pipelines" / "looplib.py"
    library.write_text(SCHEDULERS.replace("return 0", "return 1"))
    _git(repo, "commit", "-qam", "a function no tester ran")
    done = _run(repo, tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "The change touches no pipeline tester class's code." in (tmp_path / "out" / "summary.md").read_text()
