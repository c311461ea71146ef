"""The checking run's output hooks: the header, every test's reports gathered where results arrive (this process or
the xdist controller), and the end of the run: the baseline reviewed or written, the costs kept for the next run's
scheduling, the JSON report, the traces pruned, and the terminal's nosync section."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from .. import baseline, ids, render, run_report
from ..findings import Report
from ..profiling import export
from ..scenarios import PLAIN
from . import options as table
from . import xdist
from .session import NosyncSession

EMULATION_BANNER = (
    "nosync: no GPU here, so syncs are emulated on the CPU: reads of device values and blocking host copies are "
    "seen at the aten op; syncs inside C++/CUDA extensions, CUDA-only code paths, streams and pinned-memory "
    "copies are not (see docs/emulation.md)"
)


class OutputHooks:
    """Registered by plugin.start; what they gather and write is the session's state."""

    def __init__(self, session: NosyncSession) -> None:
        self.session = session

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        run = self.session
        env = _environment(run)
        options = table.resolve(run.settings, {})
        trace = "nsys" if run.settings.trace.nsys else run.settings.trace.mode
        lines = [
            f"nosync: backend {run.settings.backend} ({env['device']}), dtype {run.dtype}, mode {options.mode}, "
            f"profiler {'on' if options.profile else 'off'}, trace {trace}, torch {env['torch']}, "
            f"diffusers {env['diffusers']} ({env['diffusers_path']})"
        ]
        if run.baseline is not None:
            lines.append(run.baseline.summary(env["diffusers"]))
        if run.settings.backend == "emulate":
            lines.append(EMULATION_BANNER)
        return lines

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        run = self.session
        # Runs where results arrive: in this process, or on the xdist controller.
        test_id = ids.plain_nodeid(report.nodeid)
        run.durations[test_id] = run.durations.get(test_id, 0.0) + report.duration
        for name, value in report.user_properties:
            if name == "nosync":
                run.reports.append(Report.from_dict(value))

    def per_target(self) -> dict[str, float]:
        """Seconds spent per target (all its tests, pipeline builds included). A graph check a helper traced counts
        the helper's seconds, not this process's wait for its report (xdist's scheduling reads these)."""
        return self._seconds_by(lambda report: report.target)

    def per_group(self) -> dict[str, float]:
        """Seconds spent per xdist work unit of the suite (a target's plain tests, each of its scenarios: what
        `longest_first` orders by in the next run), counted as `per_target` counts them."""
        return self._seconds_by(lambda report: ids.target_param(report.target, report.scenario or PLAIN))

    def _seconds_by(self, key: Callable[[Report], str]) -> dict[str, float]:
        run = self.session
        first: dict[str, Report] = {}  # each test's first report that names a target
        for report in run.reports:
            if report.target:
                first.setdefault(report.test_id, report)
        totals: dict[str, float] = {}
        for test_id, seconds in run.durations.items():
            report = first.get(test_id)
            if report is not None:
                name = key(report)
                totals[name] = round(totals.get(name, 0.0) + report.metrics.get("helper_s", seconds), 2)
        return dict(sorted(totals.items()))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        run = self.session
        if run.role is xdist.Role.WORKER:
            return
        diffusers = run_report.diffusers_version()
        if run.baseline is not None:
            run.reviews = run.baseline.review(run.reports, diffusers)
            # an entry fixed or gone fails a judged run; the file a writing run writes leaves it out
            fails = any(r.fails for r in run.reviews) and not run.settings.baseline_write
            if fails and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if run.settings.baseline_write:
            entries = baseline.entries_from(run.reports, diffusers, run.baseline)
            written_with = {"diffusers": diffusers, "backend": run.settings.backend, "dtype": run.dtype}
            if self._output("--nosync-baseline-write",
                            lambda: baseline.write(run.settings.baseline_write, entries, written_with)):  # fmt: skip
                run.written = (baseline.recorded(run.reports), len(entries))
        cache = getattr(run.config, "cache", None)
        costs = self.per_group() if cache is not None else {}
        if costs:  # for the next run's scheduling (xdist.longest_first)
            cache.set(xdist.COSTS_KEY, {**cache.get(xdist.COSTS_KEY, {}), **costs})
        if run.settings.report:
            self._output("--nosync-report", self._write_report)
        if not run.settings.trace_dir:  # a directory the user named is theirs to keep: only the plugin's is bounded
            export.prune(run.trace.directory, since=run.started)
        if run.unwritten:  # checked writable before the run; something changed since
            session.exitstatus = pytest.ExitCode.USAGE_ERROR

    def _output(self, option: str, write: Callable[[], None]) -> bool:
        run = self.session
        try:
            write()
        except OSError as exc:
            run.unwritten.append(f"nosync: {option}: could not write it at the end of the run: {exc}")
            return False
        return True

    def _write_report(self) -> None:
        run = self.session
        for r in run.reports:
            r.metrics["duration_s"] = round(run.durations.get(r.test_id, 0.0), 3)
        extra = {
            "baseline_reviews": [
                {"entry": r.index, "status": r.status, "label": r.entry.label, "detail": r.detail} for r in run.reviews
            ],
            "seconds_per_target": self.per_target(),
        }
        census = run.census.coverage if run.census is not None else None
        if census is not None and (census.outcomes or census.import_failures):
            extra["census"] = census.to_dict()
        extra.update(run.shards.record() if run.shards is not None else {})
        doc = run_report.document(run.reports, _environment(run), extra)
        run_report.write(run.settings.report, doc)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        run = self.session
        if run.role is xdist.Role.WORKER:
            return
        write = terminalreporter.write_line
        terminalreporter.section("nosync")
        for line in render.run_summary(run.reports, run.root, self.per_target()):
            write(line)
        if os.environ.get("GITHUB_ACTIONS") == "true":
            for line in render.github_annotations(run.reports, run.root):
                write(line)
        where = run.baseline.path if run.baseline is not None else ""
        for review in run.reviews:
            line = f"{review.status.upper()} baseline #{review.index} ({where}): {review.entry.label}: {review.detail}"
            write(line, red=review.fails, yellow=not review.fails)
        if run.written is not None:
            findings, entries = run.written
            tests = sum(1 for r in run.reports if r.metrics.get("recorded"))
            write(
                f"nosync: {findings} findings written as known to {run.settings.baseline_write} ({entries} entries; "
                f"{tests} failing test(s) recorded, not failed)"
            )
        for sentence in run.unwritten:
            write(sentence, red=True)


def _environment(run: NosyncSession) -> dict[str, Any]:
    from ..detection import devices  # imports torch: after option checks

    return devices.environment(run.settings.backend, run.dtype)
