"""The run, with --nosync on: guards marked tests, fails tests whose reports failed, summarises the run, checks the
baseline and writes the JSON report. Registered only with --nosync, so the plugin costs nothing when off."""

from __future__ import annotations

import os
from collections.abc import Callable, Generator
from typing import Any

import pytest

from .. import baseline, render, run_report
from ..findings import Report, Status
from . import benchmark, xdist
from .options import Settings

ITEM_REPORTS = pytest.StashKey[list[Report]]()
BASELINE = pytest.StashKey[baseline.Baseline]()
EMULATION_BANNER = (
    "nosync: no GPU here, so syncs are emulated on the CPU: reads of device values and blocking host copies are "
    "seen at the aten op; syncs inside C++/CUDA extensions, CUDA-only code paths, streams and pinned-memory "
    "copies are not (see README, 'CPU emulation')"
)


class NotRun:
    """Counts the gpu/nosync tests that were skipped and shows them in the terminal summary without -rs: a check that
    did not run must be visible, whatever the exit status says. Registered with and without --nosync."""

    def __init__(self, notes: list[str]) -> None:
        self.skipped: dict[str, list[str]] = {}  # reason → test ids
        self.notes = notes  # said at the end whatever happened (e.g. an output asked for without --nosync)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and ("gpu" in report.keywords or "nosync" in report.keywords):
            longrepr = report.longrepr
            reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
            self.skipped.setdefault(reason.removeprefix("Skipped: "), []).append(report.nodeid)

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        if hasattr(config, "workerinput"):
            return
        for note in self.notes:
            terminalreporter.write_line(f"nosync: {note}", yellow=True)
        if not self.skipped:
            return
        total = sum(len(ids) for ids in self.skipped.values())
        terminalreporter.write_line(f"nosync: {total} check(s) did not run:", yellow=True)
        for reason, ids in sorted(self.skipped.items(), key=lambda kv: -len(kv[1])):
            terminalreporter.write_line(f"  {len(ids)} × {reason} (e.g. {ids[0]})", yellow=True)


def add_report(item: pytest.Item, report: Report) -> None:
    """Attach a report to the test: a failing one fails it after the test body returns."""
    report.test_id = report.test_id or item.nodeid
    item.stash.setdefault(ITEM_REPORTS, []).append(report)


class NosyncSession:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.unmap_cuda: Callable[[], None] | None = None
        if settings.backend == "emulate" and settings.map_cuda == "on":
            from .. import devices
            from ..emulation import cuda_map

            self.unmap_cuda = cuda_map.install(devices.execution_device("emulate"))
        self.reports: list[Report] = []
        self.reviews: list[baseline.Review] = []
        self.durations: dict[str, float] = {}  # test id → seconds, setup + call + teardown
        self.written = 0

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        env = run_report.environment(self.settings.backend)
        run = self.settings.guard_cli
        mode = run.get("mode") or self.settings.guard_ini.get("mode") or "warn"
        profiler = run.get("profile") or self.settings.guard_ini.get("profile")
        trace = "nsys" if self.settings.trace.nsys else self.settings.trace.mode
        line = (
            f"nosync: backend {self.settings.backend} ({env['device']}), mode {mode}, "
            f"profiler {'on' if profiler else 'off'}, trace {trace}, torch {env['torch']}, "
            f"diffusers {env['diffusers']} ({env['diffusers_path']})"
        )
        lines = [line]
        known = config.stash.get(BASELINE, None)
        if known is not None:
            lines.append(known.summary(env["diffusers"]))
        if self.settings.backend == "emulate":
            lines.append(EMULATION_BANNER)
        return lines

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if not hasattr(self.config, "workerinput"):  # after pytest-benchmark's configure loaded the compared runs
            benchmark.check_usage(self.config, self.settings)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if self.unmap_cuda is not None:
            from ..emulation import cuda_map
            from .fixtures import device_for

            cuda_map.retarget(device_for(item))  # the plain CPU for a test that only checks graph breaks

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.unmap_cuda is not None:
            self.unmap_cuda()
            self.unmap_cuda = None

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> Generator[None, Any, Any]:
        from .fixtures import NosyncFixture

        guard = None
        if pyfuncitem.get_closest_marker("nosync") is not None and "nosync" not in pyfuncitem.fixturenames:
            guard = NosyncFixture(pyfuncitem).guard(whole_block=True)  # without marked steps, the body is the step
        if guard is None:
            result = yield
        else:
            with guard:
                result = yield
        failed = [r for r in pyfuncitem.stash.get(ITEM_REPORTS, []) if r.passed is False]
        if failed:
            root = str(self.config.rootpath)
            pytest.fail("\n\n".join(render.render_report(r, root) for r in failed), pytrace=False)
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Generator[None, Any, Any]:
        report = yield
        if call.when == "call":
            root = str(self.config.rootpath)
            known = item.config.stash.get(BASELINE, None)
            for r in item.stash.get(ITEM_REPORTS, []):
                r.metrics.setdefault("baseline", known.path if known is not None else None)
                report.user_properties.append(("nosync", r.to_dict()))
                if r.findings and r.passed:
                    report.sections.append((f"nosync {r.check}", render.render_report(r, root)))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Runs where results arrive: in-process, or on the xdist controller.
        self.durations[report.nodeid] = self.durations.get(report.nodeid, 0.0) + report.duration
        for name, value in report.user_properties:
            if name == "nosync":
                self.reports.append(Report.from_dict(value))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(self.config, "workerinput"):
            return
        self._summary(terminalreporter)
        known = self.config.stash.get(BASELINE, None)
        for review in self.reviews:
            terminalreporter.write_line(
                f"{review.status.upper()} baseline #{review.index} ({known.path if known else ''}): "
                f"{review.entry.label}: {review.detail}",
                red=review.fails,
                yellow=not review.fails,
            )
        if self.settings.baseline_write:
            terminalreporter.write_line(
                f"nosync: wrote {self.written} baseline entries to {self.settings.baseline_write}"
            )

    def _per_target(self) -> dict[str, float]:
        """Seconds spent per target (all its tests, pipeline builds included). A graph check a helper traced counts
        the helper's seconds, not this process's wait for its report (xdist's scheduling reads these)."""
        totals: dict[str, float] = {}
        for test_id, seconds in self.durations.items():
            report = next((r for r in self.reports if r.test_id == test_id and r.target), None)
            if report is not None:
                seconds = report.metrics.get("helper_s", seconds)
                totals[report.target] = round(totals.get(report.target, 0.0) + seconds, 2)
        return dict(sorted(totals.items()))

    def _summary(self, terminalreporter: Any) -> None:
        reports = sorted(self.reports, key=lambda r: (r.test_id, r.check))
        tr = terminalreporter
        tr.section("nosync")
        if not reports:
            tr.write_line("no guarded test ran")
        root = str(self.config.rootpath)
        for r in reports:
            statuses: dict[str, int] = {}
            for f in r.findings:
                statuses[f.status] = statuses.get(f.status, 0) + f.count
            verdict = "FAIL" if r.passed is False else "ok"
            detail = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in sorted(statuses.items())) or "clean"
            if r.not_checked:
                detail = f"not checked: {r.not_checked[0]}"
            tr.write_line(f"{verdict:<4} {r.test_id} [{r.check}]: {detail}")
            for g in render.group(f for f in r.findings if f.status == Status.FAIL):
                tr.write_line(f"       {g.kind} {render.short_where(g.where, root)} ({g.per_step()})")
            if r.artifacts.get("trace"):
                tr.write_line(f"       trace: {r.artifacts['trace']}")
        for line in render.step_metrics_table(reports):
            tr.write_line(line)
        per_target = self._per_target()
        if per_target:
            tr.write_line("seconds per target: " + ", ".join(f"{t} {s:.1f}" for t, s in per_target.items()))
        if os.environ.get("GITHUB_ACTIONS") == "true":
            for line in render.github_annotations(reports, root):
                tr.write_line(line)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(self.config, "workerinput"):
            return
        known = self.config.stash.get(BASELINE, None)
        diffusers = run_report.diffusers_version()
        if known is not None:
            self.reviews = known.review(self.reports, diffusers)
            if any(r.fails for r in self.reviews) and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.settings.baseline_write:
            entries = baseline.entries_from(self.reports, diffusers, known)
            baseline.write(self.settings.baseline_write, entries)
            self.written = len(entries)
        cache = getattr(self.config, "cache", None)
        if cache is not None and self._per_target():  # for the next run's scheduling (plugin.xdist.longest_first)
            cache.set(xdist.COSTS_KEY, {**cache.get(xdist.COSTS_KEY, {}), **self._per_target()})
        if self.settings.report:
            for r in self.reports:
                r.metrics["duration_s"] = round(self.durations.get(r.test_id, 0.0), 3)
            extra = {
                "baseline_reviews": [
                    {"entry": r.index, "status": r.status, "label": r.entry.label, "detail": r.detail}
                    for r in self.reviews
                ],
                "seconds_per_target": self._per_target(),
            }
            doc = run_report.document(self.reports, run_report.environment(self.settings.backend), extra)
            try:
                run_report.write(self.settings.report, doc)
            except OSError as exc:
                message = f"nosync: could not write {self.settings.report}: {exc}"
                self.config.get_terminal_writer().line(message, red=True)
