"""Counting ahead for step metrics while a graph helper works (plugin.graph_helpers.count_ahead), with stand-ins for
the pipelines and the counting call (its counting is tested on real torch in tests/detectors/test_step_metrics.py):
counts are made in run order for built pipelines only, each taken once by its own test with the same options and
steps."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pytest
import torch

from pytest_nosync.detection.guard_options import GuardOptions
from pytest_nosync.findings import Report
from pytest_nosync.plugin.graph_helpers import count_ahead
from pytest_nosync.plugin.graph_helpers.count_ahead import CountAhead
from pytest_nosync.suite import measure as suite_step_metrics
from pytest_nosync.suite.targets.base import CallContext
from pytest_nosync.suite.targets.registry import TARGETS


@dataclass
class Item:
    nodeid: str


CTX = CallContext(torch.device("cpu"), torch.float32, steps=2)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    calls: list[tuple[str, int]] = []

    def count_ops(pipe: Any, call_kwargs: Any, options: GuardOptions, *, steps: int, test_id: str, target: str,
                  steps_are_calls: bool = False):  # fmt: skip
        calls.append((test_id, steps))
        return Report(test_id=test_id, check="step_metrics", target=target, passed=True)

    monkeypatch.setattr(suite_step_metrics, "count_ops", count_ops)  # imported where it is called
    return calls


def _ahead(built: set[str], backend: str = "cuda") -> tuple[CountAhead, dict[str, Item]]:
    items = {name: Item(f"t::test_step_metrics[{name}]") for name in ("flux", "wan", "ltx2")}
    tests = [(items[name], TARGETS[name]) for name in items]
    options = GuardOptions(backend=backend)
    ahead = CountAhead(tests, CTX, options=lambda item, target: options,
                       built=lambda target: object() if target.name in built else None)  # fmt: skip
    return ahead, items


def test_counts_are_made_in_run_order_for_built_pipelines_only(counted: list) -> None:
    ahead, items = _ahead(built={"flux", "ltx2"})
    assert ahead.count_next() and ahead.count_next()
    assert not ahead.count_next()  # wan's pipeline is not built: nothing is built here to count it
    assert counted == [(items["flux"].nodeid, 3), (items["ltx2"].nodeid, 3)]  # a step-metrics call's steps
    assert ahead.made == 2


def test_each_test_takes_its_own_count_once_with_the_same_options_and_steps(counted: list) -> None:
    ahead, items = _ahead(built={"flux", "wan", "ltx2"})
    while ahead.count_next():
        pass
    options = GuardOptions(backend="cuda")
    flux = ahead.take(items["flux"].nodeid, options, 3)
    assert flux is not None and flux.test_id == items["flux"].nodeid
    assert ahead.take(items["flux"].nodeid, options, 3) is None  # once
    assert ahead.take(items["wan"].nodeid, options, 4) is None  # other steps: the test counts itself
    assert ahead.take(items["ltx2"].nodeid, replace(options, budget=1), 3) is None  # other options: the same
    assert ahead.taken == 1


def test_a_test_that_ran_is_not_counted_after_it(counted: list) -> None:
    ahead, items = _ahead(built={"flux", "wan"})
    assert ahead.take(items["flux"].nodeid, GuardOptions(backend="cuda"), 3) is None  # it ran before any wait
    assert ahead.count_next() and not ahead.count_next()
    assert counted == [(items["wan"].nodeid, 3)]


def test_nothing_is_counted_ahead_where_the_timed_call_counts(counted: list) -> None:
    ahead, _ = _ahead(built={"flux", "wan", "ltx2"}, backend="emulate")
    assert not ahead.count_next()
    assert counted == [] and ahead.made == 0


SUITE_LIKE = """
def test_step_metrics(nosync, benchmark, tmp_path):
    pass
"""


def test_a_test_with_a_fixture_from_elsewhere_counts_itself(pytester: pytest.Pytester) -> None:
    (own,) = pytester.getitems(SUITE_LIKE)
    assert count_ahead.own_fixtures_only(own)  # pytest-nosync's, pytest-benchmark's and pytest's own
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture(autouse=True)
        def patches_the_pipeline():
            yield
        """
    )
    (patched,) = pytester.getitems(SUITE_LIKE)
    assert not count_ahead.own_fixtures_only(patched)  # its count made ahead would miss what the fixture does
