"""The nosync marker's arguments: validated, with a message naming the bad one."""

from __future__ import annotations

import pytest

from pytest_nosync.plugin.marks import MarkerError, parse_marker
from pytest_nosync.policy import AllowEntry


def test_defaults() -> None:
    options = parse_marker((), {})
    assert options.checks == ("syncs",)
    assert options.policy.budget == 0 and not options.policy.count_outside_steps
    assert options.mode is None


def test_full_arguments() -> None:
    options = parse_marker(
        (),
        {
            "checks": ["syncs", "host_overhead"],
            "budget": 2,
            "allow": [("x.py:3", "known, tracked in #1")],
            "count_outside_steps": True,
            "mode": "error",
        },
    )
    assert options.checks == ("syncs", "host_overhead")
    assert options.policy.budget == 2
    assert options.policy.allow == (AllowEntry("x.py:3", "known, tracked in #1"),)
    assert options.policy.count_outside_steps and options.mode == "error"


@pytest.mark.parametrize(
    ("args", "kwargs", "named"),
    [
        ((1,), {}, "positional"),
        ((), {"budjet": 1}, "'budjet'"),
        ((), {"budget": -1}, "'budget'"),
        ((), {"budget": True}, "'budget'"),
        ((), {"budget": 1.5}, "'budget'"),
        ((), {"checks": ["sync"]}, "'checks'"),
        ((), {"checks": []}, "'checks'"),
        ((), {"mode": "fast"}, "'mode'"),
        ((), {"count_outside_steps": "yes"}, "'count_outside_steps'"),
        ((), {"allow": "x.py:1"}, "'allow'"),
        ((), {"allow": [("x.py:1", "")]}, "'allow'"),
    ],
)
def test_bad_arguments_name_the_argument(args: tuple, kwargs: dict, named: str) -> None:
    with pytest.raises(MarkerError, match=named):
        parse_marker(args, kwargs)
