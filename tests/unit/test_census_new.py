"""`census new`: what a merged census's baseline did not know, the verdict of action/census_merge.sh."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_nosync import run_report
from pytest_nosync.census.outcomes import CheckOutcome, Coverage, Verdict
from pytest_nosync.findings import Finding, Kind, Report, Status


def _census(path: Path, status: Status) -> Path:
    sync = Finding(Kind.DTOH_SYNC, "diffusers/schedulers/scheduling_x.py:12", step=1, status=status)
    report = Report(test_id="tests/pipelines/x/test_x.py::XTests::nosync[syncs]", target="x", check="syncs",
                    findings=[sync, sync])  # fmt: skip
    coverage = Coverage()
    coverage.add("test_x::XTests", "syncs", CheckOutcome(Verdict.CHECKED, passed=status != Status.FAIL))
    doc = run_report.document([report], {}, {"census": coverage.to_dict()})
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(("status", "code", "said"), [
    (Status.FAIL, 1, "**2 new** against the baseline."),  # the bug twin: a sync no entry accepts
    (Status.KNOWN, 0, "Nothing new against the baseline."),
])  # fmt: skip
def test_a_finding_the_baseline_does_not_know_is_new_and_fails(
    tmp_path: Path, status: Status, code: int, said: str
) -> None:
    report = _census(tmp_path / "census.json", status)
    done = subprocess.run([sys.executable, "-m", "pytest_nosync", "census", "new", str(report)],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == code, done.stderr
    assert "## nosync census: 1 tester classes, 1 checks" in done.stdout and said in done.stdout, done.stdout
    test_id = "tests/pipelines/x/test_x.py::XTests::nosync[syncs]"
    listed = f"- `{test_id}`: dtoh_sync at `diffusers/schedulers/scheduling_x.py:12` (2×)"
    assert (listed in done.stdout) is (code == 1), done.stdout


@pytest.mark.parametrize("inside", [False, True], ids=["from-the-run's-folder", "from-its-checkout"])
def test_a_new_place_is_named_inside_its_package_from_any_directory(tmp_path: Path, inside: bool) -> None:
    """The run's machine's path is not the reader's: `census new` named `src/diffusers/...` from one directory and
    `diffusers/...` from another, where every other output names the place inside its package."""
    checkout = tmp_path / "src"
    (checkout / "diffusers").mkdir(parents=True)
    sync = Finding(Kind.DTOH_SYNC, f"{checkout}/diffusers/schedulers/scheduling_x.py:12", step=1, status=Status.FAIL)
    report = Report(test_id="tests/pipelines/x/test_x.py::XTests::nosync[syncs]", target="x", check="syncs",
                    findings=[sync])  # fmt: skip
    path = tmp_path / "census.json"
    path.write_text(json.dumps(run_report.document([report], {}, {"census": Coverage().to_dict()})))
    done = subprocess.run([sys.executable, "-m", "pytest_nosync", "census", "new", str(path)],
                          capture_output=True, text=True, cwd=checkout if inside else tmp_path)  # fmt: skip
    assert "dtoh_sync at `diffusers/schedulers/scheduling_x.py:12`" in done.stdout, done.stdout
