"""The GitHub workflows are safe to run: the self-hosted GPU runner sees trusted code only."""

from __future__ import annotations

from pathlib import Path

import yaml

WORKFLOWS = Path(__file__).parents[2] / ".github" / "workflows"


def _load(name: str) -> dict:
    doc = yaml.safe_load((WORKFLOWS / name).read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as True
    return doc


def test_ci_runs_a_pull_request_once_with_least_permissions() -> None:
    ci = _load("ci.yml")
    assert ci["on"]["push"] == {"branches": ["main"]}  # a PR branch runs through pull_request only
    assert "pull_request_target" not in ci["on"]
    assert ci["permissions"] == {"contents": "read"}
    assert "cancel-in-progress" in ci["concurrency"]
    assert all("timeout-minutes" in job for job in ci["jobs"].values())


def test_the_gpu_job_runs_trusted_code_in_a_venv_of_its_own() -> None:
    gpu = _load("ci.yml")["jobs"]["gpu"]
    assert gpu["runs-on"] == ["self-hosted", "gpu"] and gpu["needs"] == "cpu"
    condition = gpu["if"]
    assert "head.repo.full_name == github.repository" in condition  # never a fork's code
    assert "labels.*.name, 'gpu'" in condition  # a maintainer's label on the PR
    steps = " ".join(str(s.get("run", "")) for s in gpu["steps"])
    assert "python3 -m venv" in steps and '$RUNNER_TEMP/venv/bin/python" -m pytest' in steps
    assert all(
        s.get("with", {}).get("persist-credentials") is False for s in gpu["steps"] if "checkout" in s.get("uses", "")
    )


def test_diffusers_main_runs_daily_and_on_demand_in_contributor_mode() -> None:
    flow = _load("diffusers-main.yml")
    assert set(flow["on"]) == {"schedule", "workflow_dispatch"}  # never on a pull request's code
    assert flow["permissions"] == {"contents": "read"}
    for job in flow["jobs"].values():
        steps = " ".join(str(s.get("run", "")) for s in job["steps"])
        assert "git+https://github.com/huggingface/diffusers@main" in steps
        assert "--nosync-suite" in steps and "-m gpu --nosync" in steps and "--nosync-baseline" not in steps
        assert "timeout-minutes" in job
    assert flow["jobs"]["gpu"]["if"] == "vars.NOSYNC_GPU_RUNNER == 'true'"


def test_path_options_are_given_with_an_equals_sign() -> None:
    # as the README asks: a path after a space that exists (a report left by an earlier run) is taken for a test path
    for path in WORKFLOWS.glob("*.yml"):
        text = path.read_text()
        for option in ("--nosync-report", "--nosync-trace-dir", "--nosync-baseline", "--nosync-baseline-write"):
            assert f"{option} " not in text, f"{path.name}: {option} PATH (write {option}=PATH)"
