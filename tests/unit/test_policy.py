"""Allow-list matching, budgets and the outside-steps rule."""

from __future__ import annotations

import pytest

from pytest_nosync.findings import Finding, Location, Phase
from pytest_nosync.policy import AllowEntry, Policy, judge, parse_allow, where_matches

SCHED = "/venv/lib/python3.11/site-packages/diffusers/schedulers/scheduling_unipc_multistep.py"


def sync(where: str, phase: str = Phase.IN_STEP, count: int = 1, kind: str = "dtoh_sync") -> Finding:
    return Finding(kind=kind, where=where, phase=phase, step=0 if phase == Phase.IN_STEP else None, count=count)


@pytest.mark.parametrize(
    ("pattern", "where", "expected"),
    [
        (f"{SCHED}:901", f"{SCHED}:901", True),
        (f"{SCHED}:901", f"{SCHED}:902", False),
        ("scheduling_unipc_multistep.py:901", f"{SCHED}:901", True),
        ("scheduling_unipc_multistep.py:*", f"{SCHED}:17", True),
        ("scheduling_unipc_multistep.py:890-905", f"{SCHED}:901", True),
        ("scheduling_unipc_multistep.py:890-895", f"{SCHED}:901", False),
        ("*/diffusers/schedulers/*", f"{SCHED}:901", True),
        ("*/diffusers/pipelines/*", f"{SCHED}:901", False),
        ("diffusers/schedulers/scheduling_unipc_multistep.py", f"{SCHED}:5", True),
    ],
)
def test_where_patterns(pattern: str, where: str, expected: bool) -> None:
    assert where_matches(pattern, Location.parse(where)) is expected


def test_a_finding_in_a_step_fails_by_default() -> None:
    judged, passed = judge([sync("a.py:1")], Policy())
    assert not passed
    assert [f.status for f in judged] == ["fail"]


def test_outside_steps_is_reported_not_counted_unless_asked() -> None:
    findings = [sync("a.py:1", Phase.BEFORE_STEPS), sync("a.py:2", Phase.AFTER_STEPS)]
    judged, passed = judge(findings, Policy())
    assert passed and {f.status for f in judged} == {"outside_steps"}
    judged, passed = judge(findings, Policy(count_outside_steps=True))
    assert not passed and {f.status for f in judged} == {"fail"}


def test_allow_list_needs_and_keeps_a_reason() -> None:
    allow = (AllowEntry("a.py:1", "the scheduler copies one sigma per step until #123 lands"),)
    judged, passed = judge([sync("/x/a.py:1"), sync("/x/b.py:2")], Policy(allow=allow))
    assert not passed
    assert [(f.status, f.note) for f in judged] == [
        ("allowed", "the scheduler copies one sigma per step until #123 lands"),
        ("fail", ""),
    ]


def test_allow_entry_limited_to_kinds() -> None:
    allow = (AllowEntry("a.py:*", "host copies are fine here", kinds=("htod_sync",)),)
    judged, _ = judge([sync("a.py:1", kind="dtoh_sync"), sync("a.py:1", kind="htod_sync")], Policy(allow=allow))
    assert [f.status for f in judged] == ["fail", "allowed"]


@pytest.mark.parametrize(("budget", "passes"), [(0, False), (2, False), (3, True), (10, True)])
def test_budget_counts_events_not_places(budget: int, passes: bool) -> None:
    findings = [sync("a.py:1", count=2), sync("b.py:2", count=1)]
    judged, passed = judge(findings, Policy(budget=budget))
    assert passed is passes
    assert {f.status for f in judged} == ({"within_budget"} if passes else {"fail"})


def test_known_matcher_marks_known_before_the_budget() -> None:
    judged, passed = judge([sync("a.py:1")], Policy(), known=lambda f: "baseline #0: upstream")
    assert passed and judged[0].status == "known" and judged[0].note == "baseline #0: upstream"


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([("a.py:1", "")], "needs a reason"),
        ([("", "why")], "no file:line"),
        (["a.py:1"], r"must be \(pattern, reason\)"),
        ([{"pattern": "a.py:1"}], "needs a reason"),
    ],
)
def test_parse_allow_rejects_entries_without_pattern_or_reason(entries: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_allow(entries)


def test_parse_allow_accepts_pairs_and_dicts() -> None:
    parsed = parse_allow([("a.py:1", "why"), {"pattern": "b.py:*", "reason": "because", "kinds": ["htod_sync"]}])
    assert parsed == (AllowEntry("a.py:1", "why"), AllowEntry("b.py:*", "because", ("htod_sync",)))
