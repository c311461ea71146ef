"""Graph helpers: the suite's graph checks traced in helper processes while this one runs the other checks.

Optional, and one interface: the session registers a GraphHelperRun when the run may use helpers (`wanted`); the
suite asks it `outcome(item)` for a graph check and `counted(...)` for a step-metrics count made ahead. Everything
else stays inside this package: the processes and their wire (pool), the helper's own loop (helper) and
its job's check (helper_job), the counting calls made while waiting (count_ahead).

Why it exists beside pytest-xdist: tracing a denoiser with dynamo is host work of seconds per target and most of the
suite's time, while the other checks keep one core busy and the GPU nearly idle. On one GPU an xdist worker per
core pays the imports, CUDA's start and dynamo's first-use cost again for its first target, so workers sharing the
GPU did not beat one process with helpers (the measurements: docs/validation.md, "Graph helpers or xdist").
xdist stays the engine across GPUs and for the census of many pipelines; under it there are no helpers.

A helper is a fresh interpreter on this process's sys.path: it runs the code that is installed, not what a conftest
patched in this process (--nosync-graph-workers 0 traces here). It checks it imported the same diffusers. Whatever
goes wrong in a helper leaves its checks to this process, and the summary says why.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pytest

from ...detection.guard_options import GuardOptions
from ...findings import Mode, Report
from ...suite import TARGETS_MODULE
from ...suite.targets.base import Target
from .. import xdist
from .count_ahead import CountAhead, own_fixtures_only
from .pool import GraphHelpers, GraphJob, Outcome, auto_count

if TYPE_CHECKING:
    from ..parts import RunOptions, RunWithSuite

__all__ = ["GraphHelperRun", "Outcome", "wanted"]


def _suite_test(item: pytest.Item, name: str) -> bool:
    return getattr(item, "originalname", None) == name and os.path.abspath(str(item.path)) == str(TARGETS_MODULE)


def builtin_target(item: pytest.Item, test: str = "test_graph_breaks") -> Target | None:
    """The built-in target of one of the suite's `test` tests, or None for any other test (a helper can build only
    what it can look up by name)."""
    if not _suite_test(item, test):
        return None
    from ...suite.targets.registry import TARGETS  # a usage error stays quick: torch once the options passed

    target = getattr(getattr(item, "callspec", None), "params", {}).get("nosync_target")
    return target if isinstance(target, Target) and TARGETS.get(target.name) is target else None


def wanted(session: RunOptions) -> bool:
    """Whether this run may hand graph checks to helpers: not when told not to, not under xdist (its workers are the
    parallelism), and not under --pdb/--trace (a debugger must stop in this process)."""
    config = session.config
    if session.settings.graph_workers == 0 or xdist.distributing(config):
        return False
    return not (getattr(config.option, "usepdb", False) or getattr(config.option, "trace", False))


def order(items: list[pytest.Item]) -> list[pytest.Item]:
    """The suite's graph-check tests moved after its other checks and before its step metrics: their reports are
    traced while the other checks run, and no helper uses the device while step metrics are timed."""
    graph = [item for item in items if builtin_target(item) is not None]
    if not graph:
        return items
    moved = set(map(id, graph))
    rest = [item for item in items if id(item) not in moved]
    suite = [i for i, item in enumerate(rest) if os.path.abspath(str(item.path)) == str(TARGETS_MODULE)]
    metrics = [i for i in suite if _suite_test(rest[i], "test_step_metrics")]
    at = metrics[0] if metrics else (suite[-1] + 1 if suite else len(rest))
    return rest[:at] + graph + rest[at:]


class GraphHelperRun:
    """Registered by the session when `wanted`: orders the suite's tests, starts the helpers when collection is done,
    answers the graph checks and the counts made ahead, ends the helpers with the run and says what they did."""

    def __init__(self, session: RunWithSuite) -> None:
        self.session = session
        self.helpers: GraphHelpers | None = None
        self.ahead: CountAhead | None = None

    # ---- the interface -------------------------------------------------------------------------------------------
    def outcome(self, item: pytest.Item) -> Outcome | None:
        """The helper's Outcome of this test's graph check, or None when this process is to trace it: no helper has
        it, or it is taken back (GraphHelpers.claim). While a helper traces it, this process counts ahead for the
        step metrics rather than only wait."""
        helpers = self.helpers
        if helpers is None or not helpers.has(item.nodeid) or helpers.claim(item.nodeid):
            return None
        while self.ahead is not None and not helpers.done(item.nodeid) and self.ahead.count_next():
            pass
        return helpers.outcome(item.nodeid)

    def counted(self, test_id: str, options: GuardOptions, steps: int) -> Report | None:
        """The step-metrics count made ahead for `test_id` with these options and steps, or None."""
        return self.ahead.take(test_id, options, steps) if self.ahead is not None else None

    # ---- hooks ---------------------------------------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)  # after the xdist and selection hooks: this run's final order
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        items[:] = order(items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if self.session.config.option.collectonly:  # the order is shown; nothing runs
            return
        todo = self._jobs(session.items)
        setting = self.session.settings.graph_workers
        count = auto_count(len(todo), os.cpu_count()) if setting is None else min(setting, len(todo))
        if count > 0:
            self.helpers = GraphHelpers(todo, count)
            self.ahead = self._count_ahead(session.items)

    @pytest.hookimpl(trylast=True)  # in the nosync section
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        helpers = self.helpers
        if helpers is None:
            return
        here = len(helpers.fallbacks)
        line = f"nosync: {helpers.answered} graph check(s) traced in {helpers.count} helper process(es)"
        if helpers.claimed:
            line += f", {helpers.claimed} in this process before a helper was free"
        if self.ahead is not None and self.ahead.taken:  # the counts the step-metrics tests used
            line += f"; {self.ahead.taken} step-metrics count(s) made while waiting for them"
        terminalreporter.write_line(line + (f"; {here} ran in this process instead" if here else ""))
        for problem in dict.fromkeys(helpers.problems + helpers.fallbacks):
            terminalreporter.write_line(f"  {problem}", yellow=True)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.helpers is not None:
            self.helpers.close()
            self.helpers = None

    # ---- inside --------------------------------------------------------------------------------------------------
    def _jobs(self, items: list[pytest.Item]) -> list[GraphJob]:
        """A job per graph-check test a helper can run as the test would: built-in target, no checkpoint (a helper
        would load a real model a second time), and not fail-fast mode (its raise must land here). Whether this
        diffusers has the target's classes is not asked here (it would import diffusers before the helpers start):
        a helper answers that it cannot build it, and the test skips as it would anyway."""
        session = self.session
        eligible = []
        for item in items:
            target = builtin_target(item)
            if target is None or target.name in session.settings.checkpoint:
                continue
            options = session.guard_options(item, "graph_breaks", target.name, denoiser=target.denoiser)
            if options.mode != Mode.ERROR:
                eligible.append((item.nodeid, target.name, options))
        if not eligible:
            return []
        ctx = session.suite.check_context("graph_breaks")  # torch once the options passed: a usage error stays quick
        device = str(ctx.device)
        dtype = str(ctx.dtype).removeprefix("torch.")
        return [
            GraphJob(test_id, name, device, dtype, ctx.steps, ctx.seed, options) for test_id, name, options in eligible
        ]

    def _count_ahead(self, items: list[pytest.Item]) -> CountAhead:
        session, suite = self.session, self.session.suite
        ctx = suite.call_context
        tests = [
            (item, target)
            for item in items
            if (target := builtin_target(item, "test_step_metrics")) is not None and own_fixtures_only(item)
        ]
        return CountAhead(
            tests, ctx,
            options=lambda item, target: session.guard_options(item, "step_metrics", target.name,
                                                               denoiser=target.denoiser),
            built=lambda target: suite.built(target, ctx.device, ctx.dtype),
        )  # fmt: skip
