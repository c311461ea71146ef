"""The `nosync` fixture: guard blocks of a test yourself and mark its steps."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from .. import devices
from ..baseline import Baseline
from ..detectors.tracer import PendingTrace
from ..findings import Report
from ..guard import Guard
from ..policy import KnownMatcher
from ..profiling.config import TraceConfig
from ..run_report import diffusers_version
from . import marks
from . import options as settings

ITEM_REPORTS = pytest.StashKey[list[Report]]()
PENDING_TRACES = pytest.StashKey[list[PendingTrace]]()
BASELINE = pytest.StashKey[Baseline]()
_MARKER_OPTIONS = pytest.StashKey[marks.MarkerOptions]()


def marker_options(item: pytest.Item) -> marks.MarkerOptions:
    """The validated options of the item's closest `nosync` marker (defaults without one)."""
    cached = item.stash.get(_MARKER_OPTIONS, None)
    if cached is not None:
        return cached
    marker = item.get_closest_marker("nosync")
    options = marks.parse_marker(marker.args, marker.kwargs) if marker else marks.MarkerOptions()
    item.stash[_MARKER_OPTIONS] = options
    return options


def known_matcher(config: pytest.Config, test_id: str, target: str, check: str) -> KnownMatcher | None:
    """The baseline's matcher for one test, or None without a baseline."""
    baseline = config.stash.get(BASELINE, None)
    if baseline is None:
        return None
    try:
        backend = devices.resolve(settings.of(config).backend)
    except devices.BackendUnavailable:
        backend = ""
    return baseline.matcher(test_id, target, check, diffusers_version(), backend)


def trace_config(item: pytest.Item) -> TraceConfig:
    """The run's trace settings with the test's marker budgets over them. In on-failure mode a passing block's
    trace is held until the test's outcome is known (the plugin's makereport keeps or discards it), so a test
    that fails after its guarded block still gets its trace."""
    config = settings.of(item.config).trace
    budgets = config.budgets.merged(marker_options(item).trace_budgets)

    def hold(pending: PendingTrace) -> None:
        item.stash.setdefault(PENDING_TRACES, []).append(pending)

    return replace(config, budgets=budgets, defer=hold if config.mode == "on-failure" else None)


def guard_options(item: pytest.Item, check: str, target: str = "") -> dict[str, Any]:
    """What every guard of a test shares: backend, mode (command line, then marker, then warn), the
    marker's policy, the baseline's matcher for (target, check), and the test's id."""
    opts = settings.of(item.config)
    marker = marker_options(item)
    return {
        "backend": opts.backend,
        "mode": opts.mode or marker.mode or "warn",
        "policy": marker.policy,
        "known": known_matcher(item.config, item.nodeid, target, check),
        "name": item.nodeid,
    }


def add_report(item: pytest.Item, report: Report) -> None:
    """Attach a report to the test: a failing one fails it after the test body returns."""
    report.test_id = report.test_id or item.nodeid
    item.stash.setdefault(ITEM_REPORTS, []).append(report)


class NosyncFixture:
    """What the `nosync` fixture gives a test.

        def test_loop(nosync, pipe):
            with nosync.guard(pipe) as g:
                pipe(prompt_embeds=..., callback_on_step_end=g.callback_on_step_end)

    Guards take their checks and policy from the test's `nosync` marker and the command line. Without
    --nosync they are disarmed: the block runs as plain code and nothing is checked.
    """

    def __init__(self, item: pytest.Item) -> None:
        self.item = item
        self.settings = settings.of(item.config)
        self.options = marker_options(item)

    @property
    def enabled(self) -> bool:
        return self.settings.enabled

    def guard(self, pipeline: Any = None, **overrides: Any) -> Guard:
        """A guard for one block; its report is attached to the test when the block exits."""
        options: dict[str, Any] = {
            **guard_options(self.item, ",".join(self.options.checks)),
            "checks": self.options.checks,
            "profile": self.settings.profile,
            "trace": trace_config(self.item),
        }
        options.update(overrides)
        return Guard(pipeline, enabled=self.enabled, on_finish=self.add_report, **options)

    def add_report(self, report: Report) -> None:
        add_report(self.item, report)

    @property
    def reports(self) -> list[Report]:
        return list(self.item.stash.get(ITEM_REPORTS, []))


@pytest.fixture
def nosync(request: pytest.FixtureRequest) -> NosyncFixture:
    """Guard blocks of the test and mark steps; see NosyncFixture."""
    return NosyncFixture(request.node)
