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
