"""Findings as text a contributor can act on: grouped by file:line, counts per step, the hint, the stack."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from .findings import SYNC_KINDS, Finding, Kind, Location, Phase, Report, Status
from .profiling.diagnose import TraceDiagnosis
from .profiling.render import render_diagnosis
from .step_cost import summary

_SITE = os.sep + "site-packages" + os.sep


def short_path(path: str, root: str | None = None) -> str:
    """Relative to the project root when inside it; from the package name when in site-packages."""
    if _SITE in path:  # an installed package, even one in a virtualenv inside the project
        return path.split(_SITE, 1)[1]
    root = root or os.getcwd()
    if path.startswith(root.rstrip(os.sep) + os.sep):
        return os.path.relpath(path, root)
    return path


def short_where(where: Location, root: str | None = None) -> str:
    return str(Location(short_path(where.file, root), where.line))


@dataclass
class Group:
    """All findings of one kind at one file:line."""

    kind: Kind
    where: Location
    status: Status
    findings: list[Finding] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(f.count for f in self.findings)

    def per_step(self) -> str:
        parts: dict[str, int] = {}
        for f in self.findings:
            if f.phase != Phase.IN_STEP:
                label = f.phase.replace("_", " ")
            else:  # a step's finding, or one about the steady steps together (a time per step)
                label = f"step {f.step}" if f.step is not None else "steady steps"
            parts[label] = parts.get(label, 0) + f.count
        return ", ".join(f"{label} ×{n}" for label, n in parts.items())

    def regions(self) -> str:
        return ", ".join(dict.fromkeys(f.region for f in self.findings if f.region))


def group(findings: Iterable[Finding]) -> list[Group]:
    groups: dict[tuple, Group] = {}
    for f in findings:
        key = (f.status, f.kind, f.where)
        groups.setdefault(key, Group(f.kind, f.where, f.status)).findings.append(f)
    return list(groups.values())


_HEADINGS = {
    Status.FAIL: "failing",
    Status.BUDGET: "within budget",
    Status.KNOWN: "known issues (baseline)",
    Status.ALLOWED: "allowed",
    Status.OUTSIDE: "outside the denoising steps (reported, not counted)",
}


_ORDER = (Status.FAIL, Status.BUDGET, Status.KNOWN, Status.ALLOWED, Status.OUTSIDE)
_COUNTED_AS = {
    Status.FAIL: "failing",
    Status.BUDGET: "within budget",
    Status.KNOWN: "known",
    Status.ALLOWED: "allowed",
    Status.OUTSIDE: "outside the steps",
}


def render_group(g: Group, root: str | None = None, stack_depth: int = 4, verbose: bool = True) -> list[str]:
    first = g.findings[0]
    regions = g.regions()
    lines = [f"  {g.kind:<13} {short_where(g.where, root)}  — {g.per_step()}" + (f"  [{regions}]" if regions else "")]
    if not verbose:
        return lines
    if first.detail:
        lines.append(f"      {first.detail}")
    if first.note and first.status != Status.FAIL:
        lines.append(f"      why: {first.note}")
    if first.hint and first.status in (Status.FAIL, Status.BUDGET):
        lines.append(f"      hint: {first.hint}")
    shown = [fr for fr in first.stack if fr.where != first.where and _worth_showing(fr.filename)][:stack_depth]
    for i, frame in enumerate(shown):
        prefix = "      via: " if i == 0 else "           "
        lines.append(f"{prefix}{short_where(frame.where, root)} in {frame.function}")
    if "profiler" in first.source:
        lines.append(f"      seen by: {first.source}")
    return lines


_RUNNER_DIRS = (os.sep + "_pytest" + os.sep, os.sep + "pluggy" + os.sep)


def _worth_showing(filename: str) -> bool:
    """Stack frames a reader needs: not torch or the plugin, not the test runner's own machinery."""
    from .attribution import is_internal  # imports torch: only when a report with stacks is rendered

    return not is_internal(filename) and not any(d in filename for d in _RUNNER_DIRS)


def render_report(report: Report, root: str | None = None) -> str:
    """The failure text of one test."""
    groups = group(f for f in report.findings if f.kind != Kind.NOT_CHECKED)  # a reason, listed apart: no place
    lines = [_head(report, groups)]
    if report.not_checked:
        lines.append(" not checked (the test fails: a check that could not run is not a pass):")
        lines.extend(f"  - {reason}" for reason in report.not_checked)
    accepted = [f for f in report.findings if f.kind == Kind.NOT_CHECKED and f.status in (Status.KNOWN, Status.ALLOWED)]
    if accepted:
        lines.append(" not checked, accepted:")
        lines.extend(f"  - {f.detail}\n      why: {f.note}" for f in accepted)
    for status in _ORDER:
        chosen = [g for g in groups if g.status == status]
        if not chosen:
            continue
        lines.append(f" {_HEADINGS[status]}:")
        for g in chosen:
            lines.extend(render_group(g, root, verbose=status != Status.OUTSIDE))
    outside = [f for f in report.findings if f.status == Status.OUTSIDE]
    if outside:
        what = "sync(s)" if all(f.kind in SYNC_KINDS for f in outside) else "finding(s)"
        lines.append(
            f"{sum(f.count for f in outside)} {what} before/after the denoising loop are reported and allowed "
            "(set count_outside_steps to count them)"
        )
    if report.summary:
        lines.append(report.summary)
    lines.extend(trace_lines(report))
    return "\n".join(lines)


def _head(report: Report, groups: list[Group]) -> str:
    """The first line: the report's findings counted by status, adding up to `len(report.findings)` (the failing
    ones alone left the others out of the count). A finding is a problem seen `count` times at one place and step:
    where a status's events differ from its findings, they are given too, as the ×N of the lines below."""
    head = f"nosync {report.check or 'nosync'}: {len(report.findings)} finding(s)"
    if report.target:
        head += f" in target {report.target}"
    if report.backend:
        head += f" [{report.backend}]"
    parts = []
    for status in _ORDER:
        chosen = [f for f in report.findings if f.status == status]
        if not chosen:
            continue
        events = sum(f.count for f in chosen)
        part = f"{len(chosen)} {_COUNTED_AS[status]}" + (f" ({events} events)" if events != len(chosen) else "")
        if status == Status.FAIL:
            part += f" at {sum(1 for g in groups if g.status == status)} place(s)"
        parts.append(part)
    return head + (": " + ", ".join(parts) if parts else "")


def trace_lines(report: Report) -> list[str]:
    """The trace's path and its diagnosis, when the guard traced the block."""
    lines = []
    if report.artifacts.get("trace"):
        lines.append(f"trace: {report.artifacts['trace']} (open it in Perfetto)")
    if report.metrics.get("diagnosis"):
        lines.append(render_diagnosis(TraceDiagnosis.from_dict(report.metrics["diagnosis"])))
    return lines


def step_metrics_table(reports: Iterable[Report]) -> list[str]:
    """The step metrics of the run: the suite's, one row per target (per steady step, the mean device ops, host ms
    outside the denoiser and device ms, and the peak device memory; beside, the change from the compared run), then
    those of other guarded tests (a marker's `checks=["step_metrics"]`), one row per test over all its steps."""
    reports = list(reports)
    return _suite_table([r for r in reports if _is_suite(r)]) + _guard_table([r for r in reports if _guard_steps(r)])


def _is_suite(report: Report) -> bool:
    """Numbers of the suite's test_step_metrics (step_cost.combine: a schema, the steady steps under "steps")."""
    metrics = report.metrics.get("step_metrics")
    return isinstance(metrics, dict) and "schema" in metrics and bool(metrics.get("steps"))


def _guard_steps(report: Report) -> dict[str, dict]:
    """A guard's own per-step numbers (the step_metrics and device_ops detectors', keyed by step) as the suite's
    steps: the ops a step ran beside its times and memory."""
    if _is_suite(report):
        return {}
    times, ops = report.metrics.get("step_metrics"), report.metrics.get("device_ops")
    steps: dict[str, dict] = {}
    for key, numbers in (times or {}).items():
        steps[key] = dict(numbers)
    for key, counted in (ops or {}).items():
        steps.setdefault(key, {})["device_ops"] = counted["total"]
    return steps


def _cell(value: float | None, width: int, digits: int) -> str:
    return f"{'—' if value is None else f'{value:.{digits}f}':>{width}}"


def _columns(row: dict) -> str:
    peak = row["peak_bytes"] / 2**20 if row.get("peak_bytes") is not None else None
    return (
        f"{_cell(row.get('device_ops'), 11, 0)}{_cell(row.get('host_ms'), 10, 2)}"
        f"{_cell(row.get('device_ms'), 11, 2)}{_cell(peak, 10, 2)}"
    )


_COLUMNS = f"{'device ops':>11}{'host ms':>10}{'device ms':>11}{'peak MiB':>10}"
_UNITS = "  (host ms: outside the denoiser's forward; device ms: CUDA events, GPU only)"


def _suite_table(rows: list[Report]) -> list[str]:
    if not rows:
        return []
    first = rows[0].metrics["step_metrics"]
    lines = [
        f"step metrics per steady step ({first.get('backend')}, {first.get('device')}):",
        f"  {'target':<16}{_COLUMNS}  vs saved run",
    ]
    for r in sorted(rows, key=lambda r: r.target):
        compared = r.metrics.get("step_metrics_compared")
        versus = _versus(compared) if compared else "not compared"
        if r.passed is False:
            versus = f"FAIL: {versus}"
        lines.append(f"  {r.target:<16}{_columns(summary(r.metrics['step_metrics']))}  {versus}")
    lines.append(_UNITS)
    return lines


def _guard_table(rows: list[Report]) -> list[str]:
    """Guarded tests' step metrics: named by test (they have no target), over every step they ran (a marked body
    without a pipeline is one step, and no step is a warm-up to leave out)."""
    if not rows:
        return []
    names = {id(r): r.test_id + (f" [{r.target}]" if r.target else "") for r in rows}
    width = max(len(name) for name in names.values()) + 2
    lines = [
        f"step metrics of guarded tests, the mean per step ({rows[0].backend}):",
        f"  {'test':<{width}}{'steps':>5} {_COLUMNS}",
    ]
    for r in sorted(rows, key=lambda r: names[id(r)]):
        steps = _guard_steps(r)
        lines.append(f"  {names[id(r)]:<{width}}{len(steps):>5} {_columns(summary({'steps': steps}))}")
    lines.append(_UNITS)
    return lines


def _versus(compared: dict) -> str:
    parts = []
    for name, label in (("device_ops", "ops"), ("host_ms", "host"), ("device_ms", "device"), ("peak_bytes", "peak")):
        change = compared.get("changes", {}).get(name)
        if not change or change.get("before") is None or change.get("after") is None:
            continue
        before, after = change["before"], change["after"]
        if name in ("device_ops", "peak_bytes"):
            parts.append(f"{label} {after - before:+.0f}" if after != before else f"{label} =")
        else:
            parts.append(f"{label} {(after - before) / before * 100:+.0f}%" if before else f"{label} new")
    return ", ".join(parts) or "compared"


def run_summary(reports: Iterable[Report], root: str, per_target: dict[str, float]) -> list[str]:
    """The nosync section of a run's terminal summary: a line per guarded test with its verdict and the failing
    places, the step metrics' table, and the seconds each target took."""
    reports = sorted(reports, key=lambda r: (r.test_id, r.check))
    lines = [] if reports else ["no guarded test ran"]
    for r in reports:
        statuses: dict[str, int] = {}
        for f in r.findings:
            statuses[f.status] = statuses.get(f.status, 0) + f.count
        verdict = "FAIL" if r.passed is False else "ok"
        detail = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in sorted(statuses.items())) or "clean"
        if r.not_checked:
            detail = f"not checked: {r.not_checked[0]}"
        lines.append(f"{verdict:<4} {r.test_id} [{r.check}]: {detail}")
        for g in group(f for f in r.findings if f.status == Status.FAIL and f.kind != Kind.NOT_CHECKED):
            lines.append(f"       {g.kind} {short_where(g.where, root)} ({g.per_step()})")
        if r.artifacts.get("trace"):
            lines.append(f"       trace: {r.artifacts['trace']}")
    lines.extend(step_metrics_table(reports))
    if per_target:
        lines.append("seconds per target: " + ", ".join(f"{t} {s:.1f}" for t, s in per_target.items()))
    return lines


def github_annotations(reports: Iterable[Report], root: str) -> list[str]:
    """`::error file=…,line=…::` lines for failing findings inside the checked-out repository."""
    out: list[str] = []
    seen: set[tuple[str, str]] = set()
    root = root.rstrip(os.sep) + os.sep
    for report in reports:
        for f in report.findings:
            if f.status != Status.FAIL or f.kind == Kind.NOT_CHECKED or not f.filename.startswith(root):
                continue
            key = (f.kind, f.where)
            if key in seen:
                continue
            seen.add(key)
            rel = os.path.relpath(f.filename, root)
            message = f"{f.kind} in {report.test_id or 'nosync'}: {f.detail or f.kind}. {f.hint}".strip()
            out.append(f"::error file={rel},line={f.lineno},title=nosync {f.kind}::{_escape(message)}")
    return out


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
