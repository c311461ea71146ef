"""pytest hooks only. The checks themselves live in the library (guard, detectors, policy)."""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

from .. import baseline, devices, render, run_report
from ..findings import STATUS_FAIL, Report
from ..profiling import export
from ..profiling.config import TraceConfig
from ..run_report import diffusers_version
from . import marks, suite_fixtures
from . import options as settings
from . import xdist as multi_gpu
from .fixtures import BASELINE, ITEM_REPORTS, PENDING_TRACES, NosyncFixture, marker_options
from .fixtures import nosync as nosync  # a fixture, exported to pytest through this entry-point module
from .suite_fixtures import nosync_call_context as nosync_call_context
from .suite_fixtures import nosync_check as nosync_check
from .suite_fixtures import nosync_guard_options as nosync_guard_options
from .suite_fixtures import nosync_pipeline as nosync_pipeline
from .suite_fixtures import nosync_target as nosync_target

SETTINGS = settings.SETTINGS
EMULATION_BANNER = (
    "nosync: no GPU here, so syncs are emulated on the CPU: reads of device values and blocking host copies are "
    "seen at the aten op; syncs inside C++/CUDA extensions, CUDA-only code paths, streams and pinned-memory "
    "copies are not (see README, 'CPU emulation')"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    settings.add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    multi_gpu.pin_worker(config)  # first: before anything can initialise CUDA in an xdist worker
    config.addinivalue_line("markers", marks.MARKER_HELP)
    config.addinivalue_line("markers", marks.GPU_MARKER_HELP)
    config.stash[SETTINGS] = opts = settings.read(config)
    if opts.suite:
        suite_fixtures.add_suite_to_args(config)
    if not opts.enabled:
        return  # off means off: no detector, no hook beyond marker bookkeeping
    controller = not hasattr(config, "workerinput")
    for path in (opts.report, opts.baseline_write):
        if path and controller:
            try:
                run_report.check_writable(path)
            except OSError as exc:
                raise pytest.UsageError(str(exc)) from None
    # An xdist worker takes the baseline the controller resolved, whatever its own ini lookup finds.
    baseline_path = getattr(config, "workerinput", {}).get(multi_gpu.BASELINE_KEY) or opts.baseline
    if baseline_path:
        try:
            config.stash[BASELINE] = baseline.Baseline.load(baseline_path)
        except baseline.BaselineError as exc:
            raise pytest.UsageError(str(exc)) from None
    if controller and config.pluginmanager.hasplugin("xdist"):
        multi_gpu.check_worker_count(config)
    _check_trace_options(opts.trace)
    config.pluginmanager.register(NosyncSession(config, opts), "nosync-session")


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # before xdist's own answer (the CPU count)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    return multi_gpu.auto_workers(config)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    multi_gpu.assign_gpu(node)
    known = node.config.stash.get(BASELINE, None)
    if known is not None:
        node.workerinput[multi_gpu.BASELINE_KEY] = os.path.abspath(known.path)


def _check_trace_options(trace: TraceConfig) -> None:
    if trace.profiles and trace.mode != "never":
        try:
            export.check_directory(trace.directory)
        except OSError as exc:
            raise pytest.UsageError(f"--nosync-trace-dir: cannot write traces to {trace.directory}: {exc}") from None
    if trace.nsys and not devices.cuda_available():
        raise pytest.UsageError(
            "--nosync-nsys needs a CUDA device (NVTX ranges and cudaProfilerStart/Stop): run it under "
            "`nsys profile --capture-range=cudaProfilerApi` on a GPU runner"
        )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    suite_fixtures.generate_target_params(metafunc)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Validate every marker up front: a typo fails the run at once, not only on the GPU runner.
    for item in items:
        try:
            marker_options(item)
        except marks.MarkerError as exc:
            raise pytest.UsageError(f"{item.nodeid}: {exc}") from None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("gpu") is None:
        return
    opts = item.config.stash[SETTINGS]
    if not opts.enabled:
        if not devices.cuda_available():
            pytest.skip(
                "needs a CUDA device: run `pytest -m gpu --nosync` on a GPU runner "
                "(or `--nosync --nosync-backend emulate` on the CPU)"
            )
        return
    try:
        devices.resolve(opts.backend)
    except devices.BackendUnavailable as exc:
        pytest.skip(str(exc))


class NosyncSession:
    """Registered only with --nosync: guards marked tests, fails them, summarises the run."""

    def __init__(self, config: pytest.Config, opts: settings.Settings) -> None:
        self.config = config
        self.opts = opts
        self.reports: list[Report] = []
        self.stale: list[tuple[int, baseline.Entry]] = []
        self.durations: dict[str, float] = {}  # test id → seconds, setup + call + teardown
        self.written = 0
        self.backend = ""
        try:
            self.backend = devices.resolve(opts.backend)
        except devices.BackendUnavailable:
            self.backend = "unavailable"

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        env = run_report.environment(self.backend)
        mode = self.opts.mode or "warn"
        trace = "nsys" if self.opts.trace.nsys else self.opts.trace.mode
        line = (
            f"nosync: backend {self.backend} ({env['device']}), mode {mode}, "
            f"profiler {'on' if self.opts.profile else 'off'}, trace {trace}, torch {env['torch']}, "
            f"diffusers {env['diffusers']}"
        )
        if self.backend == "emulate":
            return [line, EMULATION_BANNER]
        return [line]

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> Generator[None, Any, Any]:
        guard = None
        if pyfuncitem.get_closest_marker("nosync") is not None and "nosync" not in pyfuncitem.fixturenames:
            guard = NosyncFixture(pyfuncitem).guard()
        if guard is None:
            result = yield
        else:
            with guard:
                result = yield
        reports = pyfuncitem.stash.get(ITEM_REPORTS, [])
        failed = [r for r in reports if r.passed is False]
        if failed:
            root = str(self.config.rootpath)
            pytest.fail("\n\n".join(render.render_report(r, root) for r in failed), pytrace=False)
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Generator[None, Any, Any]:
        report = yield
        if call.when == "call":
            # on-failure traces of passing blocks were held until now: the test's outcome decides
            for pending in item.stash.get(PENDING_TRACES, []):
                if report.failed:
                    pending.keep()
                else:
                    pending.discard()
            item.stash[PENDING_TRACES] = []
            root = str(self.config.rootpath)
            known = item.config.stash.get(BASELINE, None)
            for r in item.stash.get(ITEM_REPORTS, []):
                r.test_id = item.nodeid
                r.metrics.setdefault("baseline", known.path if known is not None else None)
                report.user_properties.append(("nosync", r.to_dict()))
                if r.findings and r.passed:
                    report.sections.append((f"nosync {r.check}", render.render_report(r, root)))
                elif report.failed and r.passed and r.artifacts:  # failed after the block: its trace
                    report.sections.append(("nosync trace", "\n".join(render.trace_lines(r))))
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
        for i, entry in self.stale:
            terminalreporter.write_line(
                f"STALE baseline #{i}: {entry.label} no longer occurs; remove it from {self.opts.baseline}", red=True
            )
        if self.opts.baseline_write:
            terminalreporter.write_line(f"nosync: wrote {self.written} baseline entries to {self.opts.baseline_write}")

    def _per_target(self) -> dict[str, float]:
        """Seconds spent per target (all its tests, pipeline builds included)."""
        totals: dict[str, float] = {}
        for test_id, seconds in self.durations.items():
            target = next((r.target for r in self.reports if r.test_id == test_id and r.target), None)
            if target:
                totals[target] = round(totals.get(target, 0.0) + seconds, 2)
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
            tr.write_line(f"{verdict:<4} {r.test_id} [{r.check}]: {detail}")
            for g in render.group(f for f in r.findings if f.status == STATUS_FAIL):
                tr.write_line(f"       {g.kind} {render.short_where(g.where, root)} ({g.per_step()})")
            if r.artifacts.get("trace"):
                tr.write_line(f"       trace: {r.artifacts['trace']}")
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
        if known is not None:
            self.stale = known.stale(self.reports, diffusers_version())
            if self.stale and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.opts.baseline_write:
            entries = baseline.entries_from(self.reports, diffusers_version())
            baseline.write(self.opts.baseline_write, entries)
            self.written = len(entries)
        if self.opts.report:
            for r in self.reports:
                r.metrics["duration_s"] = round(self.durations.get(r.test_id, 0.0), 3)
            extra = {
                "stale_baseline_entries": [e.label for _, e in self.stale],
                "seconds_per_target": self._per_target(),
            }
            doc = run_report.document(self.reports, run_report.environment(self.backend), extra)
            try:
                run_report.write(self.opts.report, doc)
            except OSError as exc:
                self.config.get_terminal_writer().line(f"nosync: could not write {self.opts.report}: {exc}", red=True)
