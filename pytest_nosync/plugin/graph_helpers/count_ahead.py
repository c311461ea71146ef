"""The step metrics' counting calls, made while this process would wait for a graph helper.

On a GPU each test_step_metrics makes one call that counts the ops of its steady steps besides its timed calls
(suite.measure). The count is exact whatever else runs on the machine (ten fresh processes count the same ops),
unlike the times, which its test still takes itself, after the graph checks, with no helper using the device. So
when a graph-check test would wait for its helper, this process makes the counting calls of the step-metrics tests
whose pipelines it has built, and each of those tests takes its count instead of counting again. Under emulation
the timed call counts too: there is nothing to count ahead.

A count made ahead runs outside its test's fixtures. So a test with any fixture from outside pytest, pytest-benchmark
and pytest-nosync (a conftest's or another plugin's, which may patch the pipeline for that test: the step-metrics bug
twins do) is not counted ahead: it counts in its own call.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import pytest

from ...detection.guard_options import GuardOptions
from ...findings import Report
from ...step_cost import counts_when_timed
from ...suite.targets.base import CallContext, Target

Options = Callable[[pytest.Item, Target], GuardOptions]  # a step-metrics test's GuardOptions, as its fixture makes
Built = Callable[[Target], Any]  # the target's pipeline if this process has built it, else None (never builds)


OWN_FIXTURE_MODULES = ("pytest_nosync.", "_pytest.", "pytest_benchmark.")


def own_fixtures_only(item: pytest.Item) -> bool:
    """Whether every fixture of `item` comes from pytest, pytest-benchmark or pytest-nosync (see the module's doc)."""
    definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", None)
    if definitions is None:
        return False
    for defs in definitions.values():
        for fixturedef in defs:
            module = getattr(getattr(fixturedef, "func", None), "__module__", None) or ""
            if not module.startswith(OWN_FIXTURE_MODULES):
                return False
    return True


class CountAhead:
    """The step-metrics tests still to count, in run order, and the counts made for them."""

    def __init__(self, tests: list[tuple[pytest.Item, Target]], ctx: CallContext, options: Options, built: Built):
        self._pending = deque(tests)
        self._ctx = ctx
        self._options = options
        self._built = built
        self._counted: dict[str, tuple[GuardOptions, int, Report]] = {}
        self.made = 0  # counting calls made ahead
        self.taken = 0  # of those, taken by their tests

    def count_next(self) -> bool:
        """Make the next counting call whose pipeline is built; False when none can be made now."""
        for _ in range(len(self._pending)):
            item, target = self._pending.popleft()
            pipe = self._built(target)
            if pipe is None:  # its pipeline comes later: counted in a later wait, or by its test
                self._pending.append((item, target))
                continue
            options = self._options(item, target)
            if counts_when_timed(options.backend):
                continue
            from ...suite.measure import count_ops, metrics_steps  # imports torch: the plugin's import must not

            steps = metrics_steps(self._ctx.steps)
            call_kwargs = target.kwargs_by_steps(pipe, self._ctx)
            report = count_ops(pipe, call_kwargs, options, steps=steps, test_id=item.nodeid, target=target.name,
                               steps_are_calls=target.steps_are_calls)  # fmt: skip
            self._counted[item.nodeid] = (options, steps, report)
            self.made += 1
            return True
        return False

    def take(self, test_id: str, options: GuardOptions, steps: int) -> Report | None:
        """The count made ahead for `test_id` with these options and steps, or None (the test counts itself)."""
        self._pending = deque(entry for entry in self._pending if entry[0].nodeid != test_id)
        made = self._counted.pop(test_id, None)
        if made is None or made[:2] != (options, steps):
            return None
        self.taken += 1
        return made[2]
