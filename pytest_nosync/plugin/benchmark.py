"""Step metrics through pytest-benchmark: its storage, its commands, its machine info; the judging is ours.

`test_step_metrics[target]` times its calls with the `benchmark` fixture (so `--benchmark-autosave`,
`--benchmark-save=NAME`, `--benchmark-compare[=NUM]`, `--benchmark-compare-fail` and `pytest-benchmark compare` work as
pytest-benchmark users expect) and keeps the per-step numbers in the benchmark's `extra_info["nosync"]`. With
`--benchmark-compare`, the saved run's numbers for the same test are judged here (pytest_nosync.step_cost):
exactly for device ops, with --nosync-metrics-tolerance for times and memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from .. import step_cost
from ..detection.guard_options import GuardOptions
from ..findings import Report
from ..option_table import Settings
from ..policy import add_not_checked, judge

EXTRA_KEY = "nosync"  # benchmark.extra_info[EXTRA_KEY]: the numbers of pytest_nosync.step_cost.combine


def _session(config: pytest.Config) -> Any:
    return getattr(config, "_benchmarksession", None)


def saved_runs(config: pytest.Config) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(file, benchmark) of every saved benchmark loaded by --benchmark-compare that carries step metrics."""
    session = _session(config)
    for path, benches in (getattr(session, "compared_mapping", None) or {}).items():
        for bench in benches.values():
            if isinstance(bench.get("extra_info"), dict) and EXTRA_KEY in bench["extra_info"]:
                yield str(path), bench


def comparing(config: pytest.Config) -> bool:
    session = _session(config)
    return bool(session is not None and session.compare)


def saved_for(config: pytest.Config, name: str, target: str) -> tuple[str, Mapping[str, Any]] | None:
    """The saved numbers of test `name` (e.g. test_step_metrics[wan]) for `target`, matched by test name and target
    rather than node id: the suite's node id depends on where pytest-nosync is installed."""
    for path, bench in saved_runs(config):
        numbers = bench["extra_info"][EXTRA_KEY]
        if bench.get("name") == name and numbers.get("target") == target:
            return path, numbers
    return None


def saving(config: pytest.Config) -> bool:
    """Whether pytest-benchmark writes this run's benchmarks (--benchmark-save/-autosave/-json): their step metrics
    then need their sites' identities (pytest_nosync.step_cost.identify_sites) for a later comparison."""
    session = _session(config)
    return bool(session is not None and not session.disabled and (session.save or session.autosave or session.json))


def check_usage(config: pytest.Config, settings: Settings) -> None:
    """Before the run: a save that would store nothing, and saved numbers from another backend, are usage errors."""
    session = _session(config)
    if session is None:
        return
    if (session.save or session.autosave) and session.disabled:
        raise pytest.UsageError(
            "--benchmark-save/--benchmark-autosave: pytest-benchmark saves nothing with -n (xdist) or "
            "--benchmark-disable, so no step metrics would be stored; save them in a run without -n"
        )
    for path, bench in saved_runs(config):
        saved = bench["extra_info"][EXTRA_KEY]
        if saved.get("backend") != settings.backend:
            raise pytest.UsageError(
                f"--benchmark-compare: {path} holds step metrics measured on {saved.get('backend')} "
                f"({saved.get('device')}), this run measures on {settings.backend}: op counts and times are not "
                "comparable across backends; compare with a run saved on this backend"
            )


def judge_step_metrics(
    report: Report, config: pytest.Config, settings: Settings, options: GuardOptions, name: str, where: str
) -> Report:
    """Judge the report's numbers against the saved run's (when --benchmark-compare was given); record what changed."""
    if report.passed is False or not comparing(config):
        return report
    numbers = report.metrics["step_metrics"]
    found = saved_for(config, name, report.target)
    if found is None:
        add_not_checked(
            report,
            f"--benchmark-compare: the saved run has no step metrics of {name} (target {report.target}): save a run "
            "that includes it first (--benchmark-autosave), then compare",
            options.policy,
            options.known,
        )
        return report
    path, saved = found
    try:
        comparison = step_cost.compare(saved, numbers, settings.metrics_tolerance or None, where=where)
    except step_cost.NotComparable as exc:
        add_not_checked(report, f"--benchmark-compare: {exc}", options.policy, options.known)
        return report
    report.findings, report.passed = judge(comparison.findings, options.policy, options.known)  # allow, baseline
    report.metrics["step_metrics_compared"] = {"with": path, **comparison.to_dict()}
    if comparison.wins:
        report.summary = "wins: " + "; ".join(comparison.wins)
    return report


def benchmark_repeat(benchmark: Any) -> Callable[[Callable[[], None], int], None]:
    """pytest-benchmark's pedantic mode as the suite's repeat: each round one timed call, its statistics saved."""

    def repeat(call: Callable[[], None], rounds: int) -> None:
        benchmark.pedantic(call, rounds=rounds, iterations=1, warmup_rounds=0)

    return repeat
