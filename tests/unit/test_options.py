"""The option table: marker arguments validated with a message naming the bad one, and one test's GuardOptions
resolved from the command line, the marker, the ini file and GuardOptions' defaults, in that order."""

from __future__ import annotations

import pytest

from pytest_nosync.detection.guard_options import GuardOptions
from pytest_nosync.option_table import TABLE, OptionError, Settings
from pytest_nosync.plugin.options import parse_marker, resolve
from pytest_nosync.policy import AllowEntry
from pytest_nosync.profiling.config import TraceBudgets


def test_defaults() -> None:
    options = resolve(Settings(), parse_marker((), {}))
    assert options == GuardOptions()
    assert options.checks == ("syncs",) and options.mode == "warn"
    assert options.policy.budget == 0 and not options.policy.count_outside_steps


def test_full_arguments() -> None:
    marker = parse_marker(
        (),
        {
            "checks": ["syncs", "host_overhead"],
            "budget": 2,
            "allow": [("x.py:3", "known, tracked in #1")],
            "count_outside_steps": True,
            "mode": "error",
            "trace_budgets": {"max_copies_per_step": 3},
        },
    )
    options = resolve(Settings(), marker)
    assert options.checks == ("syncs", "host_overhead")
    assert options.policy.budget == 2
    assert options.policy.allow == (AllowEntry("x.py:3", "known, tracked in #1"),)
    assert options.policy.count_outside_steps and options.mode == "error"
    assert options.trace_budgets == TraceBudgets(max_copies_per_step=3)


def test_the_marker_can_run_every_check_of_the_vocabulary() -> None:
    marker = parse_marker((), {"checks": ["graph_breaks", "recompiles", "alloc_growth"]})
    assert resolve(Settings(), marker).checks == ("graph_breaks", "recompiles", "alloc_growth")


def test_command_line_beats_marker_beats_ini() -> None:
    marker = parse_marker((), {"mode": "error"})
    assert resolve(Settings(guard_ini={"mode": "warn"}), marker).mode == "error"
    assert resolve(Settings(guard_cli={"mode": "warn"}), marker).mode == "warn"
    assert resolve(Settings(guard_ini={"mode": "error"}), {}).mode == "error"


def test_a_markers_trace_budgets_override_the_runs_per_name() -> None:
    run = TraceBudgets(max_copies_per_step=1, max_gpu_idle_fraction=0.5)
    marker = parse_marker((), {"trace_budgets": {"max_copies_per_step": 4}})
    merged = resolve(Settings(guard_cli={"trace_budgets": run}), marker).trace_budgets
    assert merged == TraceBudgets(max_copies_per_step=4, max_gpu_idle_fraction=0.5)


def test_what_the_plugin_decides_is_fixed() -> None:
    options = resolve(Settings(guard_cli={"mode": "error"}), {}, backend="emulate", denoiser="unet")
    assert (options.backend, options.denoiser, options.mode) == ("emulate", "unet", "error")


def test_every_guard_row_is_a_guard_options_field() -> None:
    fields = set(GuardOptions.__dataclass_fields__)
    assert {row.name for row in TABLE if row.guard} <= fields


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
        ((), {"trace_budgets": {"max_nothing": 1}}, "'trace_budgets'"),
    ],
)
def test_bad_arguments_name_the_argument(args: tuple, kwargs: dict, named: str) -> None:
    with pytest.raises(OptionError, match=named):
        parse_marker(args, kwargs)
