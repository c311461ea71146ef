"""The pytest side of suite.graph_helpers: which tests' graph checks go to helper processes, where those tests run in
the session, the helpers' life (started when collection is done, ended with the run) and the summary line."""

from __future__ import annotations

import os
from typing import Any

import pytest

from ..findings import Mode
from ..suite.graph_helpers import GraphHelpers, GraphJob, Outcome, auto_count
from ..suite.targets.base import Target
from . import count_ahead, xdist
from . import options as table

HELPERS = pytest.StashKey[GraphHelpers]()
SUITE_MODULE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "suite", "test_targets.py")


def _suite_test(item: pytest.Item, name: str) -> bool:
    return getattr(item, "originalname", None) == name and os.path.abspath(str(item.path)) == SUITE_MODULE


def builtin_target(item: pytest.Item, test: str = "test_graph_breaks") -> Target | None:
    """The built-in target of one of the suite's `test` tests, or None for any other test (a helper can build only
    what it can look up by name)."""
    from ..suite.targets.registry import TARGETS

    if not _suite_test(item, test):
        return None
    target = getattr(getattr(item, "callspec", None), "params", {}).get("nosync_target")
    return target if isinstance(target, Target) and TARGETS.get(target.name) is target else None


def wanted(config: pytest.Config) -> bool:
    """Whether this run may hand graph checks to helpers: not when told not to, not under xdist (its workers are the
    parallelism), and not under --pdb/--trace (a debugger must stop in this process)."""
    if table.of(config).graph_workers == 0 or xdist.distributing(config):
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
    suite = [i for i, item in enumerate(rest) if os.path.abspath(str(item.path)) == SUITE_MODULE]
    metrics = [i for i in suite if _suite_test(rest[i], "test_step_metrics")]
    at = metrics[0] if metrics else (suite[-1] + 1 if suite else len(rest))
    return rest[:at] + graph + rest[at:]


def jobs(items: list[pytest.Item]) -> list[GraphJob]:
    """A job per graph-check test a helper can run as the test would: built-in target, no checkpoint (a helper would
    load a real model a second time), and not fail-fast mode (its raise must land here). Whether this diffusers has
    the target's classes is not asked here (it would import diffusers before the helpers start): a helper answers
    that it cannot build it, and the test skips as it would anyway."""
    from .. import devices
    from .fixtures import call_context, guard_options

    eligible = []
    for item in items:
        target = builtin_target(item)
        if target is None or target.name in table.of(item.config).checkpoint:
            continue
        options = guard_options(item, "graph_breaks", target.name, denoiser=target.denoiser)
        if options.mode != Mode.ERROR:
            eligible.append((item.nodeid, target.name, options))
    if not eligible:
        return []
    ctx = call_context(items[0].config)  # one run, one call context
    device, dtype = str(devices.for_checks(ctx.device, ("graph_breaks",))), str(ctx.dtype).removeprefix("torch.")
    return [GraphJob(test_id, name, device, dtype, ctx.steps, ctx.seed, options) for test_id, name, options in eligible]


def outcome(item: pytest.Item) -> Outcome | None:
    """The helper's Outcome of this test's graph check, or None when this process is to trace it: no helper has it,
    or it is taken back (see GraphHelpers.claim). While a helper traces it, this process counts ahead for step
    metrics (plugin.count_ahead) rather than only wait."""
    helpers = item.config.stash.get(HELPERS, None)
    if helpers is None or not helpers.has(item.nodeid) or helpers.claim(item.nodeid):
        return None
    ahead = item.config.stash.get(count_ahead.COUNT_AHEAD, None)
    while ahead is not None and not helpers.done(item.nodeid) and ahead.count_next():
        pass
    return helpers.outcome(item.nodeid)


def metrics_tests(items: list[pytest.Item]) -> list[tuple[pytest.Item, Target]]:
    """The suite's step-metrics tests of built-in targets, in run order, with their targets."""
    return [(item, target) for item in items if (target := builtin_target(item, "test_step_metrics")) is not None]


class GraphHelperRun:
    """Registered with --nosync when the run may use helpers (see `wanted`)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(trylast=True)  # after the xdist and selection hooks: this run's final order
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        items[:] = order(items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if self.config.option.collectonly:  # the order is shown; nothing runs
            return
        todo = jobs(session.items)
        setting = table.of(self.config).graph_workers
        count = auto_count(len(todo), os.cpu_count()) if setting is None else min(setting, len(todo))
        if count > 0:
            self.config.stash[HELPERS] = GraphHelpers(todo, count)
            self.config.stash[count_ahead.COUNT_AHEAD] = self._count_ahead(session.items)

    def _count_ahead(self, items: list[pytest.Item]) -> count_ahead.CountAhead:
        from .fixtures import built_pipeline, call_context, guard_options

        ctx = call_context(self.config)
        tests = [(item, target) for item, target in metrics_tests(items) if count_ahead.own_fixtures_only(item)]
        return count_ahead.CountAhead(
            tests, ctx,
            options=lambda item, target: guard_options(item, "step_metrics", target.name, denoiser=target.denoiser),
            built=lambda target: built_pipeline(self.config, target, ctx.device, ctx.dtype),
        )  # fmt: skip

    @pytest.hookimpl(trylast=True)  # in the nosync section
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        helpers = self.config.stash.get(HELPERS, None)
        if helpers is None:
            return
        here = len(helpers.fallbacks)
        line = f"nosync: {helpers.answered} graph check(s) traced in {helpers.count} helper process(es)"
        if helpers.claimed:
            line += f", {helpers.claimed} in this process before a helper was free"
        ahead = self.config.stash.get(count_ahead.COUNT_AHEAD, None)
        if ahead is not None and ahead.taken:  # the counts the step-metrics tests used
            line += f"; {ahead.taken} step-metrics count(s) made while waiting for them"
        terminalreporter.write_line(line + (f"; {here} ran in this process instead" if here else ""))
        for problem in dict.fromkeys(helpers.problems + helpers.fallbacks):
            terminalreporter.write_line(f"  {problem}", yellow=True)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        helpers = config.stash.get(HELPERS, None)
        if helpers is not None:
            helpers.close()
            del config.stash[HELPERS]
