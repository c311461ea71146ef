"""The census as a CI matrix (.github/workflows/census.yml; action.yml's `shard` and `merge`, action/census_shard.sh
and action/census_merge.sh), run as its jobs run them on a small fake checkout: three shard steps, then the merge
step, give the unsharded run's census table and fail on the sync the baseline does not know; judged by the baseline
that merge wrote, the next round passes; a shard missing fails the merge with its one sentence."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pytest_nosync import cli
from tests.shared_session import made_once

from .test_shards import CHECKOUT, TESTER

ROOT = Path(__file__).resolve().parents[2]
CHECKS = "--nosync-checks=syncs -p no:randomly"


def _env(**nosync: str) -> dict[str, str]:
    python_path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "NOSYNC_PYTHON": sys.executable, "PYTHONPATH": python_path, **nosync}


def _script(name: str, repo: Path, **nosync: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(ROOT / "action" / name)], cwd=repo, env=_env(**nosync), capture_output=True,
                          text=True, timeout=600)  # fmt: skip


def _shards(repo: Path, count: int, into: Path, **nosync: str) -> None:
    """Each shard's step in a folder of its own, as download-artifact lays out the matrix's artifacts."""
    for k in range(1, count + 1):
        done = _script("census_shard.sh", repo, NOSYNC_SHARD=f"{k}/{count}", NOSYNC_WORKERS=CHECKS,
                       NOSYNC_OUT=str(into / f"nosync-shard-{k}"), **nosync)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr  # a writing run records its failures


@pytest.fixture(scope="module")
def census(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fake checkout (Sana's tester reads a value of the device in its steps), its unsharded census (whole.json,
    durations.json) and its census in 3 shards (shards/), merged (merged/: the step's exit status in status): made
    once per test run, whichever xdist worker its tests went to."""
    return made_once(tmp_path_factory, "ci-matrix", _census)


def _census(top: Path) -> None:
    repo = top / "repo"
    for module, classes in CHECKOUT.items():
        path = repo / module
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(TESTER.format(name=name, pipeline=("NetPipeline" if i else "LoopPipeline"),
                                                denoiser=("net" if i else "transformer"),
                                                read=name == "SanaPipelineFastTests")
                                  for i, name in enumerate(classes)))  # fmt: skip
    whole = subprocess.run([sys.executable, "-m", "pytest", "tests/pipelines", "-m", "gpu", "--nosync", "-q",
                            "--nosync-trace=never", "-p", "no:cacheprovider", *CHECKS.split(),
                            f"--nosync-report={top / 'whole.json'}", f"--nosync-durations={top / 'durations.json'}"],
                           cwd=repo, env=_env(), capture_output=True, text=True, timeout=600)  # fmt: skip
    assert whole.returncode == 1 and "1 failed, 6 passed" in whole.stdout, whole.stdout + whole.stderr
    _shards(repo, 3, top / "shards", NOSYNC_DURATIONS=str(top / "durations.json"))
    merged = _script("census_merge.sh", repo, NOSYNC_SHARDS=str(top / "shards"), NOSYNC_OUT=str(top / "merged"),
                     NOSYNC_DURATIONS=str(top / "durations.json"),
                     GITHUB_STEP_SUMMARY=str(top / "step-summary.md"))  # fmt: skip
    (top / "merged" / "status").write_text(f"{merged.returncode}\n{merged.stdout}{merged.stderr}")


def _table(report: Path, capsys: pytest.CaptureFixture) -> str:
    capsys.readouterr()
    assert cli.main(["census", "table", str(report)]) == 0
    return capsys.readouterr().out


@pytest.mark.slow
def test_the_merged_shards_are_the_unsharded_census_and_fail_on_the_new_sync(
    census: Path, capsys: pytest.CaptureFixture
) -> None:
    status, said = (census / "merged" / "status").read_text().split("\n", 1)
    assert status == "1", said  # the sync is new: no baseline knows it
    merged = census / "merged"
    assert _table(merged / "census.json", capsys) == _table(census / "whole.json", capsys)
    summary = (merged / "summary.md").read_text()
    assert summary == (census / "step-summary.md").read_text()  # the job's summary
    assert "## nosync census: 7 tester classes, 7 checks\n\n**2 new** against the baseline." in summary
    assert "- `tests/pipelines/sana/test_sana.py::SanaPipelineFastTests::nosync[syncs]`: dtoh_sync at" in summary
    assert summary.endswith(_table(census / "whole.json", capsys))  # then the census table
    assert len(json.loads((merged / "durations.json").read_text())) == 7  # for the next shard plan
    (entry,) = json.loads((merged / "baseline.json").read_text())["entries"]
    assert entry["target"] == "test_sana::SanaPipelineFastTests"
    pytest.importorskip("matplotlib")
    assert (merged / "census-map.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.slow
def test_judged_by_the_merged_baseline_the_next_round_passes(census: Path) -> None:
    baseline = census / "merged" / "baseline.json"
    _shards(census / "repo", 2, census / "judged", NOSYNC_BASELINE=str(baseline))
    done = _script("census_merge.sh", census / "repo", NOSYNC_SHARDS=str(census / "judged"),
                   NOSYNC_OUT=str(census / "judged-merged"))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Nothing new against the baseline." in done.stdout


@pytest.mark.slow
def test_a_missing_shard_or_baseline_write_fails_the_merge_with_one_sentence(census: Path, tmp_path: Path) -> None:
    partial = tmp_path / "shards"
    shutil.copytree(census / "shards", partial)
    shutil.rmtree(partial / "nosync-shard-2")
    done = _script("census_merge.sh", census / "repo", NOSYNC_SHARDS=str(partial), NOSYNC_OUT=str(tmp_path / "out"))
    assert done.returncode == 4 and done.stdout == ""
    assert "shard(s) 2 of 3 missing: a census merges every shard's report" in done.stderr
    assert done.stderr.count("\n") == 1 and not (tmp_path / "out" / "census.json").exists()
    (partial / "nosync-shard-1" / "nosync-baseline-1-of-3.json").unlink()
    done = _script("census_merge.sh", census / "repo", NOSYNC_SHARDS=str(partial), NOSYNC_OUT=str(tmp_path / "out"))
    assert done.returncode == 4 and done.stderr.count("\n") == 1
    assert "nosync-baseline-1-of-3.json is missing: every shard's report is merged with the baseline" in done.stderr
    shutil.rmtree(partial)
    done = _script("census_merge.sh", census / "repo", NOSYNC_SHARDS=str(tmp_path), NOSYNC_OUT=str(tmp_path / "out"))
    assert done.returncode == 4 and "no shard report (nosync-shard-K-of-N.json) under" in done.stderr


def test_the_workflow_runs_the_actions_shard_step_in_a_matrix_then_its_merge_step() -> None:
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "census.yml").read_text())
    flow["on"] = flow.pop(True, flow.get("on"))  # YAML 1.1 reads the key `on` as True
    assert "workflow_dispatch" in flow["on"] and "pull_request" not in flow["on"]
    assert flow["permissions"] == {"contents": "read"}
    shard, merge = flow["jobs"]["shard"], flow["jobs"]["merge"]
    assert shard["runs-on"] == ["self-hosted", "gpu"] and shard["if"] == "vars.NOSYNC_GPU_RUNNER == 'true'"
    assert shard["strategy"]["matrix"]["shard"] == [1, 2, 3, 4] and shard["strategy"]["fail-fast"] is False
    (step,) = [s for s in shard["steps"] if s.get("uses") == "./pytest-nosync"]
    assert step["with"]["shard"] == "${{ matrix.shard }}/4" and "merge" not in step["with"]
    checkouts = [s for s in shard["steps"] if s.get("uses", "").startswith("actions/checkout")]
    assert {s["with"].get("repository") for s in checkouts} == {"huggingface/diffusers", None}
    assert all(s["with"]["persist-credentials"] is False for s in checkouts)
    assert merge["needs"] == "shard" and "!cancelled()" in merge["if"] and "NOSYNC_GPU_RUNNER" in merge["if"]
    (download,) = [s for s in merge["steps"] if s.get("uses", "").startswith("actions/download-artifact")]
    (step,) = [s for s in merge["steps"] if s.get("uses") == "./pytest-nosync"]
    assert step["with"]["merge"] == "true" and step["with"]["shards"] == download["with"]["path"]
    uploads = [s["with"]["path"] for s in merge["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    assert uploads == [step["with"]["out"]]  # census.json, baseline.json, durations.json, the heat map, the summary
    assert all("timeout-minutes" in job for job in flow["jobs"].values())
    # the action: `shard` runs census_shard.sh, `merge` census_merge.sh, neither the pull-request gate (as before)
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    scripts = {step["run"]: step.get("if") for step in action["runs"]["steps"] if "/action/" in step["run"]}
    assert scripts == {
        'bash "$GITHUB_ACTION_PATH/action/census_pr.sh"': "inputs.shard == '' && inputs.merge != 'true'",
        'bash "$GITHUB_ACTION_PATH/action/census_shard.sh"': "inputs.shard != ''",
        'bash "$GITHUB_ACTION_PATH/action/census_merge.sh"': "inputs.merge == 'true'",
    }
    assert action["inputs"]["shard"]["default"] == "" and action["inputs"]["merge"]["default"] == "false"
