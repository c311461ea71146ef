"""The checking run's state: one NosyncSession, made by plugin.start with --nosync, holds the run's and each test's
state; the hooks that read and change it live by phase beside it (collection_hooks, run_hooks, output_hooks,
xdist_hooks), and the run's parts (suite_run, census, fixture, graph_helpers) ask it only what plugin.parts names
(pytest-benchmark's split: the plugin's hooks, a session object, thin fixtures).

Run state: the Settings read once, the xdist role, the baseline, every test's Report and duration, what the end of
the run wrote, the trace directory, and the suite's state (plugin.suite_run: targets, their pipelines, the graph
helpers). Test state: the reports attached to a test (its stash), its marker's arguments, its GuardOptions, its
scenario.

What imports torch (devices) is imported inside the functions that use it: this module is imported before the run's
options are checked, and a usage error stays quick.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pytest

from .. import baseline, ids, render, run_report
from ..detection.guard_options import GuardOptions
from ..findings import Report
from ..option_table import Settings
from ..profiling import export
from ..scenarios import PLAIN, SCENARIOS
from . import options as table
from .suite_run import SuiteRun

if TYPE_CHECKING:
    import torch

    from ..policy import KnownMatcher
    from ..profiling.config import TraceConfig
    from ..scenarios import Scenario
    from .census import Census
    from .census_shard import CensusShards
    from .xdist import Role

ITEM_REPORTS = pytest.StashKey[list[Report]]()
NO_RERUN = (
    "trace: none kept: a test's own guarded block is not run twice (its body may not be repeatable); "
    "--nosync-trace always keeps the trace of every guarded block"
)
_MARKER = pytest.StashKey[dict[str, Any]]()


class NosyncSession:
    """See the module docstring. Built by plugin.start at configure time."""

    def __init__(self, config: pytest.Config, settings: Settings, role: Role, known: baseline.Baseline | None):
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
        self.shards: CensusShards | None = None  # --nosync-shard and --nosync-durations (plugin.census_shard)
        # the pipelines a marked test turned a scenario on for, held weakly: a pipeline freed since is not one of them
        # (ids were kept, and a fresh pipeline given a freed one's id was refused as having a scenario on)
        self.scenario_pipelines: weakref.WeakSet = weakref.WeakSet()
        # marked tests of the user's own pipelines by where their scenarios come from: the option, or their marker
        self.scenario_tests: dict[str, set[str]] = {"option": set(), "marker": set()}
        self.started = time.time()  # traces modified since are this run's: never pruned
        self.unreachable = ""  # in a worker that cannot run the controller's backend: why, which fails each test

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
        from ..detection import devices  # imports torch: after option checks

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

    def scenario_of(self, item: pytest.Item) -> Scenario:
        """The scenario a test checks its pipeline with: a census item's, the parameter of a suite's check or of a
        marked test, else plain."""
        scenario = getattr(item, "scenario", None) or getattr(getattr(item, "callspec", None), "params", {}).get(
            "nosync_scenario"
        )
        return scenario if scenario is not None else SCENARIOS[PLAIN]
