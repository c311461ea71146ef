"""The checking run: one NosyncSession, registered with --nosync, owns the run's and each test's state and answers
pytest's hooks (pytest-benchmark's split: the plugin's hooks, a session object, thin fixtures).

Run state: the Settings read once, the xdist role, the baseline, every test's Report, the trace
directory, and the suite's state (plugin.suite_run: targets, their pipelines, the graph helpers). Test state: the
reports attached to a test (its stash), its marker's arguments, its GuardOptions.

What imports torch (devices, the emulation, suite.scenarios and guarded_call, heap_freeze) is imported inside the
functions that use it: this module is imported before the run's options are checked, and a usage error stays quick.
"""

from __future__ import annotations

import linecache
import os
import sys
import time
from collections.abc import Callable, Generator
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .. import baseline, ids, render, run_report
from ..findings import Report
from ..guard_options import GuardOptions
from ..profiling import export
from ..scenarios import PLAIN, SCENARIOS
from . import benchmark, graph_helpers, suite_collection, usage, xdist
from . import options as table
from .census import Census
from .fixture import BODY_GUARD, NosyncFixture
from .gpu_sharing import GpuSharing
from .options import Settings
from .suite_run import SuiteRun

if TYPE_CHECKING:
    import torch

    from ..policy import KnownMatcher
    from ..profiling.config import TraceConfig
    from ..scenarios import Scenario

ITEM_REPORTS = pytest.StashKey[list[Report]]()
NO_RERUN = (
    "trace: none kept: a test's own guarded block is not run twice (its body may not be repeatable); "
    "--nosync-trace always keeps the trace of every guarded block"
)
_MARKER = pytest.StashKey[dict[str, Any]]()
EMULATION_BANNER = (
    "nosync: no GPU here, so syncs are emulated on the CPU: reads of device values and blocking host copies are "
    "seen at the aten op; syncs inside C++/CUDA extensions, CUDA-only code paths, streams and pinned-memory "
    "copies are not (see docs/emulation.md)"
)


class NosyncSession:
    """See the module docstring. Built by `start` at configure time."""

    def __init__(self, config: pytest.Config, settings: Settings, role: xdist.Role, known: baseline.Baseline | None):
        self.config = config
        self.settings = settings
        self.role = role
        self.baseline = known
        self.reports: list[Report] = []  # every test's, where results arrive (this process or the xdist controller)
        self.reviews: list[baseline.Review] = []
        self.durations: dict[str, float] = {}  # test id → seconds, setup + call + teardown
        self.written: tuple[int, int] | None = None  # (findings, entries) a --nosync-baseline-write run wrote
        self.unwritten: list[str] = []  # outputs that could not be written at the end: one sentence each, exit 4
        self.census: Census | None = None  # diffusers' tester classes under the gate (plugin.census)
        self._scenario_pipelines: set[int] = set()  # ids of the pipelines a marked test turned a scenario on for
        # marked tests of the user's own pipelines by where their scenarios come from: the option, or their marker
        self.scenario_tests: dict[str, set[str]] = {"option": set(), "marker": set()}
        self.started = time.time()  # traces modified since are this run's: never pruned
        self._unmap_cuda = self._map_cuda()
        self.unreachable = ""  # in a worker that cannot run the controller's backend: why, which fails each test

    @classmethod
    def start(cls, config: pytest.Config) -> NosyncSession:
        """Read and check the run's options (each problem one sentence, before anything runs) and register the
        session. (An xdist worker's GPU is already in its environment: the controller's spec put it there.)"""
        role = xdist.role(config)
        xdist.share_cores(config)
        settings = table.read(config)
        usage.check_targets(settings)
        if settings.suite:
            usage.add_suite_to_args(config)
        controllers = xdist.controllers_backend(config)
        unreachable = ""
        try:
            backend = usage.resolve_backend(settings, controllers)  # resolved once, for the run
        except pytest.UsageError as exc:
            if controllers is None:
                raise
            # a worker's usage error is a traceback on the controller and a worker started again, over and over: each
            # of its tests fails with the sentence instead
            backend, unreachable = controllers, str(exc)
        settings = replace(settings, backend=backend)
        usage.check_scenarios(settings)
        usage.check_pipeline_checks(settings)
        if role is xdist.Role.ALONE:  # a controller runs nothing (and touches no GPU before its workers share it)
            usage.check_dtype(settings)
        if role is not xdist.Role.WORKER:
            usage.check_rootdir(config)
            usage.check_outputs(settings)
        known = usage.load_baseline(config, settings)
        if role is xdist.Role.CONTROLLER:
            xdist.check_worker_count(config, settings.share_gpus)
        session = cls(config, settings, role, known)
        session.unreachable = unreachable
        config.pluginmanager.register(session, "nosync-session")
        if role is xdist.Role.CONTROLLER:
            config.pluginmanager.register(GpuSharing(settings.mps, settings.share_gpus), "nosync-gpu-sharing")
        from .heap_freeze import HeapFreeze  # imports torch: after option checks

        session.census = Census(session)
        config.pluginmanager.register(session.census, "nosync-census")
        config.pluginmanager.register(HeapFreeze(), "nosync-heap-freeze")
        if graph_helpers.wanted(session):
            session.suite.helpers = graph_helpers.GraphHelperRun(session)
            config.pluginmanager.register(session.suite.helpers, "nosync-graph-helpers")
        return session

    @cached_property
    def suite(self) -> SuiteRun:
        """The suite's state (targets, pipelines, graph helpers), made on first use."""
        return SuiteRun(self)

    @property
    def root(self) -> str:
        return str(self.config.rootpath)

    # ---- a test's options --------------------------------------------------------------------------------------
    def marker_values(self, item: pytest.Item) -> dict[str, Any]:
        """The validated arguments of the item's closest `nosync` marker ({} without one)."""
        cached = item.stash.get(_MARKER, None)
        if cached is None:
            marker = item.get_closest_marker("nosync")
            cached = item.stash[_MARKER] = table.parse_marker(marker.args, marker.kwargs) if marker else {}
        return cached

    @property
    def dtype(self) -> str:
        """The dtype the run's pipelines run in: the census's (float32 unless --nosync-dtype says) where it checks
        diffusers' tester classes, else the suite's (bfloat16 on CUDA, float32 emulated, unless --nosync-dtype)."""
        if not self.settings.dtype and self.census is not None and self.census.coverage.outcomes:
            return "float32"  # (the census's collection header says it before)
        return self.settings.suite_dtype

    def known_matcher(self, test_id: str, target: str, check: str, scenario: str = "plain") -> KnownMatcher | None:
        """The baseline's matcher for one test, or None without a baseline."""
        if self.baseline is None:
            return None
        version = run_report.diffusers_version()
        return self.baseline.matcher(test_id, target, check, version, self.settings.backend, scenario)

    def guard_options(
        self, item: pytest.Item, check: str = "", target: str = "", scenario: str = "", **fixed: Any
    ) -> GuardOptions:
        """The test's GuardOptions (plugin.options.resolve), with the baseline's matcher for (target, check, scenario);
        `check` defaults to the marker's checks."""
        marker = self.marker_values(item)
        check = check or ",".join(marker.get("checks", GuardOptions.checks))
        scenario = scenario or self.scenario_of(item).name
        known = self.known_matcher(ids.plain_nodeid(item.nodeid), target, check, scenario)
        settings = self.settings
        return table.resolve(settings, marker, backend=settings.backend, trace=self.trace, known=known, **fixed)

    def device_for(self, item: pytest.Item) -> torch.device:
        """The device a test's tensors and models go on: the backend's, or the plain CPU under the emulation for a
        test whose checks all run there (devices.for_checks)."""
        from .. import devices  # imports torch: after option checks

        checks = self.marker_values(item).get("checks", GuardOptions.checks)
        return devices.for_checks(devices.execution_device(self.settings.backend), checks)

    @cached_property
    def trace(self) -> TraceConfig:
        """The run's trace settings with their directory decided: --nosync-trace-dir, else `nosync-traces` in
        pytest's cache directory (a run leaves no files where it runs), else a private temporary directory."""
        directory = self.settings.trace_dir
        if not directory:
            cache = getattr(self.config, "cache", None)  # set by pytest's cache plugin, after the plugins' configure
            directory = str(cache.mkdir("nosync-traces") if cache is not None else export.private_temp_dir("traces"))
        return replace(self.settings.trace, directory=directory)

    def add_report(self, item: pytest.Item, report: Report) -> None:
        """Attach a report to the test: a failing one fails it after the test body returns."""
        report.test_id = report.test_id or ids.plain_nodeid(item.nodeid)
        if report.scenario == "plain":
            report.scenario = self.scenario_of(item).name
        item.stash.setdefault(ITEM_REPORTS, []).append(report)

    def reports_of(self, item: pytest.Item) -> list[Report]:
        return list(item.stash.get(ITEM_REPORTS, []))

    def verdict(self, reports: list[Report]) -> None:
        """Fail the test on its failing reports, with their text. A run that writes the baseline records them instead:
        every failing finding becomes an entry of the file it writes (said at its end), and the test passes."""
        failed = [r for r in reports if r.passed is False]
        if not failed:
            return
        trace = self.settings.trace
        for r in failed:  # the suite's and the census's checks run a failing call again under the profiler
            if (
                trace.mode == "on-failure"
                and not trace.nsys
                and not r.artifacts.get("trace")
                and NO_RERUN not in (r.summary or "")
            ):
                r.summary = "\n".join(filter(None, (r.summary, NO_RERUN)))
        if self.settings.baseline_write:
            for r in failed:
                r.metrics["recorded"] = True
            return
        pytest.fail("\n\n".join(render.render_report(r, self.root) for r in failed), pytrace=False)

    # ---- collection --------------------------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_directory(self, path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        return suite_collection.directory(path, parent)

    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makemodule(self, module_path: Path, parent: pytest.Collector) -> pytest.Module | None:
        return suite_collection.module(module_path, parent)

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "nosync_target" in metafunc.fixturenames:
            self.suite.generate_target_params(metafunc)
            return
        marker = metafunc.definition.get_closest_marker("nosync")
        if marker is None:
            return
        if "scenarios" in marker.kwargs:  # a marked test of the user's own pipeline names its scenarios: they win
            try:
                scenarios = table.parse_marker((), {"scenarios": marker.kwargs["scenarios"]})["scenarios"]
            except table.OptionError:
                return  # a usage error naming the test once collection ends (plugin's pytest_collection_modifyitems)
            self.scenario_tests["marker"].add(metafunc.definition.nodeid)
        elif self.settings.scenarios:  # --nosync-scenarios covers a marked test's pipeline as the marker's list does
            scenarios = self.settings.scenarios
            self.scenario_tests["option"].add(metafunc.definition.nodeid)
        else:
            return
        if "nosync_scenario" not in metafunc.fixturenames:
            metafunc.fixturenames.append("nosync_scenario")
        metafunc.parametrize("nosync_scenario", [pytest.param(s, id=s.name) for s in scenarios], indirect=True)

    def pytest_report_collectionfinish(self, config: pytest.Config, items: list[pytest.Item]) -> list[str]:
        """Which scenarios the marked tests of the user's own pipelines take: --nosync-scenarios's, or their marker's
        own list, which wins."""
        option, own = len(self.scenario_tests["option"]), len(self.scenario_tests["marker"])
        if not self.settings.scenarios or not (option or own):
            return []
        names = ",".join(s.name for s in self.settings.scenarios)
        line = f"nosync: --nosync-scenarios={names} applies to {option} marked test(s) of their own pipelines"
        return [line + (f"; {own} name their own (the marker's scenarios= wins)" if own else "")]

    def scenario_of(self, item: pytest.Item) -> Scenario:
        """The scenario a test checks its pipeline with: a census item's, the parameter of a suite's check or of a
        marked test, else plain."""
        scenario = getattr(item, "scenario", None) or getattr(getattr(item, "callspec", None), "params", {}).get(
            "nosync_scenario"
        )
        return scenario if scenario is not None else SCENARIOS[PLAIN]

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.suite.deselect_checks(items)
        cache = getattr(self.config, "cache", None)
        if cache is not None and xdist.distributing(self.config):
            items[:] = xdist.longest_first(items, cache.get(xdist.COSTS_KEY, {}))

    # ---- xdist ---------------------------------------------------------------------------------------------------
    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_setupnodes(self, config: pytest.Config, specs: list[Any]) -> None:
        sharing = getattr(config.pluginmanager.get_plugin("nosync-gpu-sharing"), "sharing", None)
        xdist.pin_specs(specs, self.settings.share_gpus, renumbered=sharing is not None and sharing.renumbered)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[xdist.BACKEND_KEY] = self.settings.backend
        if self.baseline is not None:
            node.workerinput[xdist.BASELINE_KEY] = os.path.abspath(self.baseline.path)

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if config.getvalue("dist") != "loadgroup":
            return None  # xdist's own
        return xdist.make_scheduler(config, log, [t.name for t in self.suite.selected()])

    # ---- the run -------------------------------------------------------------------------------------------------
    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        env = run_report.environment(self.settings.backend, self.dtype)
        options = table.resolve(self.settings, {})
        trace = "nsys" if self.settings.trace.nsys else self.settings.trace.mode
        lines = [
            f"nosync: backend {self.settings.backend} ({env['device']}), dtype {self.dtype}, mode {options.mode}, "
            f"profiler {'on' if options.profile else 'off'}, trace {trace}, torch {env['torch']}, "
            f"diffusers {env['diffusers']} ({env['diffusers_path']})"
        ]
        if self.baseline is not None:
            lines.append(self.baseline.summary(env["diffusers"]))
        if self.settings.backend == "emulate":
            lines.append(EMULATION_BANNER)
        return lines

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        # Findings quote their lines and the baseline matches code by its text: a file edited since this process
        # last read it (pytest run in-process again, an editor's save between runs) is read afresh.
        linecache.checkcache()
        if self.role is not xdist.Role.WORKER:  # after pytest-benchmark's configure loaded the compared runs
            benchmark.check_usage(self.config, self.settings)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if self.unreachable:
            pytest.fail(self.unreachable, pytrace=False)
        if self._unmap_cuda is not None:
            from ..emulation import cuda_map  # imports torch: after option checks

            cuda_map.retarget(self.device_for(item))  # the plain CPU for a test that only checks graph breaks

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> Generator[None, Any, Any]:
        guard = None
        if pyfuncitem.get_closest_marker("nosync") is not None:  # the body, whether or not the test takes `nosync`
            # The body; with a pipeline among the test's arguments, that pipeline's steps (guard.Guard's doc)
            pipeline = _pipeline_argument(pyfuncitem)
            if self._with_scenario(pyfuncitem, pipeline):
                # A test that takes the fixture draws its steps with its blocks: what the body does before them
                # (building a scheduler, its set_timesteps) is before the steps, as in a block of its own.
                blocks = "nosync" in pyfuncitem.fixturenames
                guard = NosyncFixture(pyfuncitem, self).guard(pipeline, whole_block=True, steps_later=blocks)
                pyfuncitem.stash[BODY_GUARD] = guard  # the `nosync` fixture's blocks are the body guard's
            else:  # the scenario raised: its error is the test's report, and the body does not run
                pyfuncitem.obj = _no_body
        if guard is None:
            result = yield
        else:
            from ..suite.scenarios import calls_context  # imports torch: after option checks

            try:
                with calls_context(self.scenario_of(pyfuncitem)), guard:  # the scenario's process-wide needs, if any
                    result = yield
            finally:
                del pyfuncitem.stash[BODY_GUARD]
        self.verdict(self.reports_of(pyfuncitem))
        return result

    def _with_scenario(self, item: pytest.Function, pipeline: Any) -> bool:
        """Turn a marked test's scenario on for its pipeline before the body runs: skipped where it does not apply;
        False (its error reported) where turning it on raised. Each pipeline takes one scenario: a fixture that hands
        the same pipeline to two tests would check the second with both."""
        scenario = self.scenario_of(item)
        if scenario.name == PLAIN:
            return True
        if pipeline is None:
            why = (f"scenario {scenario.name}: the test has no diffusers pipeline among its arguments to turn it on "
                   "for (a fixture that builds one)")  # fmt: skip
            marker = item.get_closest_marker("nosync")
            if marker is not None and "scenarios" not in marker.kwargs:  # --nosync-scenarios's: counted, not failed
                pytest.skip(f"not checkable: {why}")
            pytest.fail(why, pytrace=False)
        if id(pipeline) in self._scenario_pipelines:
            pytest.fail(f"scenario {scenario.name}: this pipeline already has a scenario on: build a new one per test "
                        "(a function-scoped fixture)", pytrace=False)  # fmt: skip
        from .. import devices  # imports torch: after option checks
        from ..suite.guarded_call import error_report  # imports torch: after option checks
        from ..suite.scenarios import NotApplicable, apply, kept_process_wide  # imports torch: after option checks

        options = self.guard_options(item)
        self._scenario_pipelines.add(id(pipeline))
        try:
            with kept_process_wide():  # later tests of the process keep the attention backend they had
                apply(scenario, pipeline, options.denoiser, devices.execution_device(self.settings.backend))
        except NotApplicable as exc:
            pytest.skip(f"not checkable: {exc}")
        except Exception as exc:
            self.add_report(item, error_report(exc, options, test_id=ids.plain_nodeid(item.nodeid)))
            return False
        return True

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Generator[None, Any, Any]:
        report = yield
        if call.when == "call":
            for r in self.reports_of(item):
                r.metrics.setdefault("baseline", self.baseline.path if self.baseline is not None else None)
                report.user_properties.append(("nosync", r.to_dict()))
                if r.findings and r.passed:
                    report.sections.append((f"nosync {r.check}", render.render_report(r, self.root)))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Runs where results arrive: in this process, or on the xdist controller.
        test_id = ids.plain_nodeid(report.nodeid)
        self.durations[test_id] = self.durations.get(test_id, 0.0) + report.duration
        for name, value in report.user_properties:
            if name == "nosync":
                self.reports.append(Report.from_dict(value))

    def per_target(self) -> dict[str, float]:
        """Seconds spent per target (all its tests, pipeline builds included). A graph check a helper traced counts
        the helper's seconds, not this process's wait for its report (xdist's scheduling reads these)."""
        return self._seconds_by(lambda report: report.target)

    def per_group(self) -> dict[str, float]:
        """Seconds spent per xdist work unit of the suite (a target's plain tests, each of its scenarios: what
        `longest_first` orders by in the next run), counted as `per_target` counts them."""
        return self._seconds_by(lambda report: ids.target_param(report.target, report.scenario or PLAIN))

    def _seconds_by(self, key: Callable[[Report], str]) -> dict[str, float]:
        first: dict[str, Report] = {}  # each test's first report that names a target
        for report in self.reports:
            if report.target:
                first.setdefault(report.test_id, report)
        totals: dict[str, float] = {}
        for test_id, seconds in self.durations.items():
            report = first.get(test_id)
            if report is not None:
                name = key(report)
                totals[name] = round(totals.get(name, 0.0) + report.metrics.get("helper_s", seconds), 2)
        return dict(sorted(totals.items()))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.role is xdist.Role.WORKER:
            return
        diffusers = run_report.diffusers_version()
        if self.baseline is not None:
            self.reviews = self.baseline.review(self.reports, diffusers)
            # an entry fixed or gone fails a judged run; the file a writing run writes leaves it out
            fails = any(r.fails for r in self.reviews) and not self.settings.baseline_write
            if fails and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.settings.baseline_write:
            entries = baseline.entries_from(self.reports, diffusers, self.baseline)
            written_with = {"diffusers": diffusers, "backend": self.settings.backend, "dtype": self.dtype}
            if self._output("--nosync-baseline-write",
                            lambda: baseline.write(self.settings.baseline_write, entries, written_with)):  # fmt: skip
                self.written = (baseline.recorded(self.reports), len(entries))
        cache = getattr(self.config, "cache", None)
        costs = self.per_group() if cache is not None else {}
        if costs:  # for the next run's scheduling (xdist.longest_first)
            cache.set(xdist.COSTS_KEY, {**cache.get(xdist.COSTS_KEY, {}), **costs})
        if self.settings.report:
            self._output("--nosync-report", self._write_report)
        if not self.settings.trace_dir:  # a directory the user named is theirs to keep: only the plugin's is bounded
            export.prune(self.trace.directory, since=self.started)
        if self.unwritten:  # checked writable before the run; something changed since
            session.exitstatus = pytest.ExitCode.USAGE_ERROR

    def _output(self, option: str, write: Callable[[], None]) -> bool:
        try:
            write()
        except OSError as exc:
            self.unwritten.append(f"nosync: {option}: could not write it at the end of the run: {exc}")
            return False
        return True

    def _write_report(self) -> None:
        for r in self.reports:
            r.metrics["duration_s"] = round(self.durations.get(r.test_id, 0.0), 3)
        extra = {
            "baseline_reviews": [
                {"entry": r.index, "status": r.status, "label": r.entry.label, "detail": r.detail} for r in self.reviews
            ],
            "seconds_per_target": self.per_target(),
        }
        census = self.census.coverage if self.census is not None else None
        if census is not None and (census.outcomes or census.import_failures):
            extra["census"] = census.to_dict()
        doc = run_report.document(self.reports, run_report.environment(self.settings.backend, self.dtype), extra)
        run_report.write(self.settings.report, doc)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.role is xdist.Role.WORKER:
            return
        write = terminalreporter.write_line
        terminalreporter.section("nosync")
        for line in render.run_summary(self.reports, self.root, self.per_target()):
            write(line)
        if os.environ.get("GITHUB_ACTIONS") == "true":
            for line in render.github_annotations(self.reports, self.root):
                write(line)
        where = self.baseline.path if self.baseline is not None else ""
        for review in self.reviews:
            line = f"{review.status.upper()} baseline #{review.index} ({where}): {review.entry.label}: {review.detail}"
            write(line, red=review.fails, yellow=not review.fails)
        if self.written is not None:
            findings, entries = self.written
            tests = sum(1 for r in self.reports if r.metrics.get("recorded"))
            write(
                f"nosync: {findings} findings written as known to {self.settings.baseline_write} ({entries} entries; "
                f"{tests} failing test(s) recorded, not failed)"
            )
        for sentence in self.unwritten:
            write(sentence, red=True)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self._unmap_cuda is not None:
            self._unmap_cuda()
            self._unmap_cuda = None

    # ---- the emulation's CUDA mapping ----------------------------------------------------------------------------
    def _map_cuda(self) -> Any:
        """Under the emulation (and --nosync-map-cuda on), code written for CUDA runs on the emulated device for the
        run; the returned function undoes it."""
        if self.settings.backend != "emulate" or self.settings.map_cuda != "on":
            return None
        from .. import devices  # imports torch: after option checks
        from ..emulation import cuda_map  # imports torch: after option checks

        return cuda_map.install(devices.execution_device("emulate"))


def _no_body(**arguments: Any) -> None:
    """A marked test's body when its scenario could not be turned on: nothing of it ran."""


def _pipeline_argument(item: pytest.Function) -> Any:
    """The diffusers pipeline among a test's arguments, if there is one (diffusers is not imported for the question:
    a pipeline exists only where it is). Reading `diffusers.DiffusionPipeline` also imports diffusers' pipeline
    module before the body's guard begins, which the body's step drawing needs when the body builds its pipeline."""
    diffusers = sys.modules.get("diffusers")
    base = getattr(diffusers, "DiffusionPipeline", None) if diffusers is not None else None
    if base is None:
        return None
    return next((value for value in item.funcargs.values() if isinstance(value, base)), None)
