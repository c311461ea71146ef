"""Comparing two runs: agreement, misses and false alarms by place and step."""

from __future__ import annotations

from pytest_nosync.compare import compare, place, render
from pytest_nosync.findings import Finding, Location, Phase, Report


def _report(test: str, *findings: Finding, passed: bool = True) -> Report:
    return Report(findings=list(findings), test_id=test, check="syncs", passed=passed)


def test_places_line_up_across_install_prefixes() -> None:
    assert place(Location.parse("/tmp/site-0.42.1/diffusers/schedulers/x.py:886")) == place(
        Location.parse("/venv/lib/diffusers/schedulers/x.py:886")
    )


def test_counts_both_misses_and_false_alarms() -> None:
    gpu = [
        _report(
            "t::wan",
            Finding("htod_sync", "/a/diffusers/schedulers/u.py:886", step=0),
            Finding("htod_sync", "/a/diffusers/schedulers/u.py:1021", step=1),
            Finding("dtoh_sync", "/a/diffusers/pipelines/p.py:9", step=None, phase=Phase.BEFORE_STEPS),
            passed=False,
        )
    ]
    emulated = [
        _report(
            "t::wan",
            Finding("htod_sync", "/b/diffusers/schedulers/u.py:886", step=0),
            Finding("dtoh_sync", "/b/diffusers/models/m.py:5", step=1),
            passed=False,
        ),
        _report("t::only_here", Finding("dtoh_sync", "/b/x.py:1", step=0), passed=False),
    ]
    result = compare(gpu, emulated)
    assert result.tests == 1
    assert len(result.both) == 1 and len(result.only_reference) == 1 and len(result.only_other) == 1
    assert result.recall == 0.5
    text = render(result, ("gpu", "emulate"))
    assert "only in gpu: t::wan [syncs]: htod_sync diffusers/schedulers/u.py:1021 step 1" in text
    assert "only in emulate: t::wan [syncs]: dtoh_sync diffusers/models/m.py:5 step 1" in text


def test_a_test_failing_only_in_the_other_run_is_a_false_failure() -> None:
    result = compare([_report("t::a")], [_report("t::a", Finding("dtoh_sync", "/x.py:1", step=0), passed=False)])
    assert result.failed_only_other == ["t::a [syncs]"]


def test_reports_without_a_test_in_common_are_one_sentence(tmp_path) -> None:
    """A recall over no common test said 100% and exit 0; now a usage error, one sentence."""
    import json
    import subprocess
    import sys

    from pytest_nosync import run_report

    for name, test in (("a.json", "t::a"), ("b.json", "t::b")):
        (tmp_path / name).write_text(json.dumps(run_report.document([_report(test)], {})))
    done = subprocess.run([sys.executable, "-m", "pytest_nosync", "compare", str(tmp_path / "a.json"),
                           str(tmp_path / "b.json")], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 4 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "have no test in common: nothing to compare" in done.stderr
