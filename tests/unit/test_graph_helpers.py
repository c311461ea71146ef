"""The helper processes' orchestration (plugin.graph_helpers.pool), with stand-in helpers that speak the real wire: jobs
answered in order whoever asks first, a helper that dies or imports another diffusers leaves its checks to this
process with the reason, and the data that crosses the wire survives it."""

from __future__ import annotations

import io
import pickle
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pytest_nosync.baseline import Baseline
from pytest_nosync.detection.guard_options import GuardOptions
from pytest_nosync.findings import Finding
from pytest_nosync.plugin.graph_helpers.pool import GraphHelpers, GraphJob, auto_count, diffusers_file, receive, send
from pytest_nosync.suite import SHIPPED_BASELINE

# A stand-in helper: announces the diffusers file it is given, then answers each job after `delay` seconds with a
# passing Report naming the job; a job whose test id contains "die" kills it.
STAND_IN = textwrap.dedent(
    """
    import os, sys, time
    from pytest_nosync.findings import Report
    from pytest_nosync.plugin.graph_helpers.pool import Outcome, receive, send

    answers = sys.stdout.buffer
    send(answers, sys.argv[1])
    while (job := receive(sys.stdin.buffer)) is not None:
        if "die" in job.test_id:
            sys.stderr.write("stand-in: told to die\\n")
            os._exit(7)
        time.sleep(float(sys.argv[2]))
        send(answers, Outcome(report=Report(test_id=job.test_id, check="graph_breaks", target=job.target,
                                            passed=True, metrics={"pid": os.getpid()})))
    """
)


def _jobs(*names: str) -> list[GraphJob]:
    return [GraphJob(f"t::test_graph_breaks[{n}]", n, "cpu", "float32", 2, 0, GuardOptions()) for n in names]


def _stand_in(tmp_path: Path, announce: str | None = None, delay: float = 0.0) -> list[str]:
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    return [sys.executable, str(script), announce or diffusers_file(), str(delay)]


def test_each_job_is_answered_even_when_its_test_asks_before_the_helper_is_done(tmp_path: Path) -> None:
    jobs = _jobs("a", "b", "c", "d", "e")
    helpers = GraphHelpers(jobs, 2, command=_stand_in(tmp_path, delay=0.2))
    try:
        outcomes = [helpers.outcome(job.test_id) for job in jobs]  # asked at once: the answers are still coming
    finally:
        helpers.close()
    assert [o.report.test_id for o in outcomes] == [job.test_id for job in jobs]
    assert len({o.report.metrics["pid"] for o in outcomes}) == 2  # both helpers took jobs
    assert helpers.answered == 5 and not helpers.fallbacks and not helpers.problems
    assert helpers.outcome("t::test_other") is None  # a test no helper has runs its check itself


def test_a_helper_ended_by_close_is_not_a_problem(tmp_path: Path) -> None:
    # A run that is over (or stopped early) ends its helpers, busy or about to be told to stop: the summary must not
    # call that a failure. Seen in CI once: `graph helper 1: [Errno 32] Broken pipe (exit status -15)` after every
    # job had been answered, when close() ended a helper before its thread had told it there was nothing left.
    jobs = _jobs("a", "b")
    helpers = GraphHelpers(jobs, 1, command=_stand_in(tmp_path, delay=5.0))
    deadline = time.monotonic() + 30
    while helpers._up < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert helpers._up == 1
    time.sleep(0.2)  # the helper has taken job a and is tracing it
    helpers.close()
    assert helpers.problems == [] and helpers.fallbacks == []
    assert helpers.outcome(jobs[0].test_id).failed  # the job it was tracing is answered, not left to hang a waiter


def test_a_job_no_helper_has_started_is_taken_back_by_its_test(tmp_path: Path) -> None:
    jobs = _jobs("a", "b", "c")
    helpers = GraphHelpers(jobs, 1, command=_stand_in(tmp_path, delay=0.5))
    try:
        assert not helpers.claim(jobs[2].test_id)  # the helper is still starting: it takes "a" in a moment
        while not helpers._up:
            time.sleep(0.01)
        assert helpers.claim(jobs[2].test_id)  # the one helper is busy with "a": "c" is traced by its test instead
        assert not helpers.has(jobs[2].test_id) and not helpers.claim(jobs[2].test_id)
        first = helpers.outcome(jobs[0].test_id)
        assert not helpers.claim(jobs[0].test_id)  # answered: nothing to take back
        second = helpers.outcome(jobs[1].test_id)
    finally:
        helpers.close()
    assert first.report.test_id == jobs[0].test_id and second.report.test_id == jobs[1].test_id
    assert helpers.claimed == 1 and helpers.answered == 2 and not helpers.fallbacks


def test_a_helper_that_dies_leaves_its_check_and_the_queue_to_this_process(tmp_path: Path) -> None:
    jobs = _jobs("a", "die", "c")
    helpers = GraphHelpers(jobs, 1, command=_stand_in(tmp_path))
    try:
        first, died, after = (helpers.outcome(job.test_id) for job in jobs)
    finally:
        helpers.close()
    assert first.report is not None
    assert died.report is None and after.report is None
    assert "exit status 7" in died.failed and "stand-in: told to die" in died.failed
    assert after.failed == died.failed  # no helper was left for it
    assert helpers.answered == 1 and len(helpers.fallbacks) == 2 and len(helpers.problems) == 1


def test_the_other_helper_takes_the_queue_when_one_dies(tmp_path: Path) -> None:
    jobs = _jobs("die", "b", "c", "d")
    helpers = GraphHelpers(jobs, 2, command=_stand_in(tmp_path, delay=0.1))
    try:
        died, *rest = (helpers.outcome(job.test_id) for job in jobs)
    finally:
        helpers.close()
    assert died.failed.startswith("graph helper ")
    assert all(o.report is not None for o in rest)
    assert len({o.report.metrics["pid"] for o in rest}) == 1


def test_a_helper_that_imported_another_diffusers_is_not_trusted(tmp_path: Path) -> None:
    jobs = _jobs("a")
    helpers = GraphHelpers(jobs, 1, command=_stand_in(tmp_path, announce="/elsewhere/diffusers/__init__.py"))
    try:
        outcome = helpers.outcome(jobs[0].test_id)
    finally:
        helpers.close()
    assert outcome.report is None
    assert "imported diffusers from /elsewhere/diffusers/__init__.py" in outcome.failed


def test_a_helper_that_cannot_start_is_said(tmp_path: Path) -> None:
    jobs = _jobs("a", "b")
    helpers = GraphHelpers(jobs, 1, command=[str(tmp_path / "no-such-python")])
    outcome = helpers.outcome(jobs[1].test_id)
    helpers.close()
    assert "could not start" in outcome.failed


@pytest.mark.parametrize(
    ("jobs", "cpus", "count"),
    [
        (1, 16, 0),
        (0, 16, 0),
        (6, 16, 3),
        (6, 8, 2),
        (6, 4, 1),
        (6, 3, 0),
        (6, 2, 0),
        (6, None, 0),
        (2, 64, 2),
        (6, 64, 3),
    ],
)
def test_auto_count(jobs: int, cpus: int | None, count: int) -> None:
    assert auto_count(jobs, cpus) == count


def test_the_wire_carries_messages_and_says_when_the_other_end_closed() -> None:
    stream = io.BytesIO()
    send(stream, {"a": 1})
    send(stream, None)
    stream.seek(0)
    assert receive(stream) == {"a": 1}
    assert receive(stream) is None
    with pytest.raises(EOFError):
        receive(stream)
    stream = io.BytesIO(stream.getvalue()[:-3])
    receive(stream)
    with pytest.raises(EOFError, match="mid-message"):
        receive(stream)


def test_a_tests_baseline_matcher_crosses_the_wire() -> None:
    known = Baseline.load(str(SHIPPED_BASELINE), shipped=True)
    entry = next(e for e in known.entries if e.target != "*" and e.check != "*")
    test_id = f"x::test_{entry.check}[{entry.target}]"
    # No version: every entry's range admits it (the installed diffusers may predate this entry's range)
    matcher = known.matcher(test_id, entry.target, entry.check, None)
    copied = pickle.loads(pickle.dumps(GuardOptions(known=matcher))).known
    assert matcher.scoped and copied == matcher
    assert copied(Finding("dtoh_sync", "/elsewhere/module.py:1")) is None
