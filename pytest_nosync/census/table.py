"""The census as a table: one row per pipeline tester class of a checked diffusers, from a run's JSON report.

    python -m pytest_nosync census report.json [--title "diffusers main at 58eb52c0, H100"] > docs/census-main.md

Each row: the pipeline, its tester, and a cell per check (the columns come from the checks' registry, CHECKS) saying
what the check found — syncs per steady step (the steps after the first, whose count is what every further step of a
real call costs) with their places, graph breaks and recompiles, steady-state growth, module-tree walks — or, where
it reached no verdict, `raised` or `not checked: <why>`: a number is only shown for a check that ran. Known issues
(the baseline's) count as found: the census maps what the code does, the baseline only decides what fails.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .. import ids
from ..checks import CHECKS, SUITE_CHECKS
from ..findings import Kind, Phase, Report, Status
from ..scenarios import PLAIN
from ..source_identity import short_place
from .outcomes import CheckOutcome, Coverage, Verdict, column_order, outcome_of
from .raises import Causes, causes

COUNTED = (Status.FAIL, Status.KNOWN, Status.BUDGET)  # what the code does, whatever the policy made of it


@dataclass(frozen=True)
class Cell:
    """What one check of one class says: its outcome, and where it reached a verdict, its count (syncs per steady step
    for a per-steady-step check, else every event in the steps) and the places it found, with their events."""

    outcome: CheckOutcome | None  # None: the check did not run in this census
    count: int = 0
    places: Mapping[str, int] = field(default_factory=dict)
    reported: bool = True  # False: it reached its verdict, and the census holds no report to count from

    @property
    def checked(self) -> bool:
        """It reached its verdict, and its count is measured (a cell without its report has no number)."""
        return self.outcome is not None and self.outcome.verdict == Verdict.CHECKED and self.reported

    def text(self, raises: Causes | None = None) -> str:
        """The cell as a table says it; a raise points at its cause's footnote where `raises` numbers it."""
        outcome = self.outcome
        if outcome is None:
            return "not run"
        if outcome.verdict == Verdict.RAISED:
            ref = raises.ref(outcome) if raises is not None else ""
            return f"raised {ref}" if ref else "raised"
        if outcome.verdict in (Verdict.NOT_CHECKED, Verdict.SKIPPED):
            return f"not checked: {short_reason(outcome.reason)}"
        if not self.reported:
            return "no report"
        if not self.places:
            return "0"
        return f"{self.count}: {_top(self.places)}"


@dataclass
class Row:
    pipeline: str
    tester: str  # the tester class's id
    cells: dict[str, Cell]  # column (a check, or check-scenario) → its cell
    note: str = ""

    @property
    def short_tester(self) -> str:
        return ids.short_tester(self.tester)


def columns(coverage: Coverage) -> list[str]:
    """The census's columns: the suite's checks in CHECKS' order, then any other column its outcomes have."""
    seen = {column for checks in coverage.outcomes.values() for column in checks}
    return column_order(seen) if seen else list(SUITE_CHECKS)


def rows(reports: Iterable[Report], coverage: Coverage) -> list[Row]:
    """The table's rows, sorted by pipeline (unknown last). A census item's report joins its tester's row at its check
    and scenario's column (the report carries both; the tester class is the first part of its test id)."""
    by_class: dict[str, dict[str, Report]] = {}
    for report in reports:
        item = ids.parse(report.test_id)
        if item is not None:
            by_class.setdefault(item.tester, {})[ids.column(report.check, report.scenario)] = report
    out = []
    wanted = columns(coverage)
    for tester in sorted(set(by_class) | set(coverage.outcomes)):
        checks, outcomes = by_class.get(tester, {}), coverage.outcomes.get(tester, {})
        cells = {column: _cell(column, outcomes.get(column), checks.get(column)) for column in wanted}
        pipeline = next((o.pipeline for o in outcomes.values() if o.pipeline), "") or _pipeline_of(checks.values())
        # in the table's column order, not the order the workers finished them in: a run renders one way
        note = _note([outcomes[c] for c in column_order(outcomes)], [checks[c] for c in column_order(checks)])
        if pipeline in coverage.deprecated:  # tried as any class; the reader weighs its findings knowing it
            note = "; ".join(filter(None, ("deprecated", note)))
        out.append(Row(pipeline or "—", tester, cells, note))
    return sorted(out, key=lambda r: (r.pipeline == "—", r.pipeline, r.short_tester))


def render(reports: Iterable[Report], coverage: Coverage, environment: Mapping[str, Any], title: str) -> str:
    table = rows(reports, coverage)
    wanted = columns(coverage)
    # a sync under any scenario counts the row (a scenario census may have no plain column)
    syncs = [c for c in wanted if ids.parse_column(c).check == "syncs"]
    with_syncs = sum(1 for r in table if any(r.cells[c].checked and r.cells[c].count for c in syncs))
    raised = sum(1 for r in table if any(c.outcome and c.outcome.verdict == Verdict.RAISED for c in r.cells.values()))
    checks = len(coverage.all())
    lines = [
        f"# {title}",
        "",
        f"diffusers {environment.get('diffusers')}, torch {environment.get('torch')}, backend "
        f"{environment.get('backend')} ({environment.get('device')}){dtype_of(environment)}. "
        f"{coverage.count(Verdict.CHECKED)} of {checks} "
        f"checks reached a verdict; {coverage.fully_checked} of {len(coverage.outcomes)} pipeline tester classes "
        f"fully checked; {with_syncs} with a sync in their steady steps, {raised} raised.",
        "",
        "| pipeline | tester | " + " | ".join(column_title(c) for c in wanted) + " | notes |",
        "| --- | --- | " + " | ".join("---" for _ in wanted) + " | --- |",
    ]
    raises = causes(cell.outcome for row in table for cell in row.cells.values())
    for row in table:
        cells = (row.pipeline, row.short_tester, *(row.cells[c].text(raises) for c in wanted), row.note)
        lines.append(markdown_row(cells))
    notes = raises.footnotes("check")
    return "\n".join(lines + (["", *notes] if notes else [])) + "\n"


def markdown_row(cells: Iterable[str]) -> str:
    """One row of a Markdown table, a `|` inside a cell escaped."""
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def dtype_of(environment: Mapping[str, Any]) -> str:
    """The dtype a census ran its pipelines in, as a title says it (a report of an earlier release has none)."""
    dtype = environment.get("dtype")
    return f", {dtype}" if dtype else ""


def column_title(column: str) -> str:
    check, scenario = ids.parse_column(column)
    title = CHECKS[check].column or check if check in CHECKS else column
    return f"{title} ({scenario})" if scenario != PLAIN else title


def _cell(column: str, outcome: CheckOutcome | None, report: Report | None) -> Cell:
    if outcome is not None and outcome.verdict == Verdict.RAISED and not outcome.exception and report is not None:
        # a report written before outcomes said what raised: its `error` finding says it
        outcome = replace(outcome_of(report, outcome.pipeline), accepted=outcome.accepted)
    if outcome is None or outcome.verdict != Verdict.CHECKED:
        return Cell(outcome)
    if report is None:  # a zero would claim a count no report gives
        return Cell(outcome, reported=False)
    check = CHECKS.get(ids.parse_column(column).check)
    kinds = check.kinds if check is not None else frozenset()
    found = [f for f in report.findings if f.kind in kinds and f.phase == Phase.IN_STEP and f.status in COUNTED]
    places: Counter[str] = Counter()
    for f in found:
        places[short_place(f.where)] += f.count
    if check is not None and check.per_steady_step:
        per_step: Counter[int] = Counter()
        for f in found:
            if f.step is not None and f.step > 0:
                per_step[f.step] += f.count
        count = max(per_step.values(), default=0)
    else:
        count = sum(f.count for f in found)
    return Cell(outcome, count, dict(places))


def _top(places: Mapping[str, int], n: int = 3) -> str:
    ranked = Counter(places).most_common()
    shown = ", ".join(f"`{place}`" for place, _ in ranked[:n])
    return shown + (f" (+{len(ranked) - n})" if len(ranked) > n else "")


def _pipeline_of(reports: Iterable[Report]) -> str:
    return next((str(r.metrics["pipeline"]) for r in reports if r.metrics.get("pipeline")), "")


def _note(outcomes: Iterable[CheckOutcome], reports: Iterable[Report]) -> str:
    """The stand-in tester a class is built through (census.standin_testers), the inputs that free its steps
    (testers.STEP_FREEING), the components and inputs generated for a class checked through a sibling, then why the
    class's checks did not all reach a verdict: the first raise, else the distinct reasons."""
    reports = list(reports)
    made = next((r.metrics["generated_inputs"] for r in reports if r.metrics.get("generated_inputs")), [])
    built = next((r.metrics["generated_components"] for r in reports if r.metrics.get("generated_components")), [])
    standin = next((r.metrics["standin"] for r in reports if r.metrics.get("standin")), "")
    freed = next((r.metrics["steps_freed_by"] for r in reports if r.metrics.get("steps_freed_by")), "")
    generated = [f"through the stand-in tester {standin}"] if standin else []
    generated += [f"its steps freed by {freed}"] if freed else []
    generated += [f"built with generated component(s) {'; '.join(built)}"] if built else []
    generated += [f"checked with generated input(s) {', '.join(made)}"] if made else []
    for report in reports:
        for f in report.findings:
            if f.kind == Kind.ERROR:
                return "; ".join([*generated, f"raises: {str(f.detail).split(' (diffusers')[0][:120]}"])
    reasons = dict.fromkeys(o.reason for o in outcomes if o.verdict in (Verdict.NOT_CHECKED, Verdict.SKIPPED))
    return "; ".join([*generated, *(f"not checked: {r}"[:240] for r in reasons)])


# Our own reasons, as a cell says them: (pattern, short form with the pattern's groups)
_SHORT = (
    (r"ran (\d+) of the (\d+) denoising steps", r"ran \1 of \2 steps"),
    (r"runs (\d+) denoising step\(s\) a call whatever num_inference_steps asks", r"capped at \1 step(s)"),
    (r"dynamo captured no graph", "no graph captured"),
    (r"No module named '([\w.]+)'", r"needs \1"),
    (r"requires the (\w+) library", r"needs \1"),
    (r"needs ([\w, ]+), not installed here", r"needs \1"),
    (r"hub repository", "hub repository missing"),
    (r"skips: (Deprecated)?|skips itself", "skips itself"),
    (r"no denoising loop", "no denoising loop"),
    (r"takes (\w+), which the census does not know", r"inputs not understood"),
    (r"is called once per step", "no per-step denoiser"),
    (r"cannot be checked on the emulated device|cannot run on the emulated device", "not on the emulated device"),
    (r"cannot run on the CPU", "CUDA only"),
    (r"has no enable_cache", "no CacheMixin"),
    (r"does not support \w+'s blocks", "blocks unsupported"),
    (r"found no block or attention", "nothing to cache"),
    (r"needs the pipeline's current_timestep", "no current_timestep"),
    (r"has no (enable_\w*offload|enable_layerwise_casting|set_attention_backend|add_adapter)", r"no \1"),
    (r"takes no PEFT adapter", "no adapters"),
    (r"peft is not installed", "needs peft"),
    (r"names no _repeated_blocks|as its repeated blocks, and this one has none", "no repeated blocks"),
    (r"does not support group offloading", "group offloading unsupported"),
    (r"has no model adapter for", "no model adapter"),
    (r"diffusers \S+ has no (\w+Config)", r"no \1"),
    (r"is no ModularPipeline", "not modular"),
    (r"has no support for this pipeline's inputs here: RuntimeError: No available kernel", "no kernel for its inputs"),
    (r"requires the '(\w+)' attention backend", r"needs the \1 backend"),
    (r"is not usable because of missing package.*install `([\w-]+)", r"needs \1"),  # an attention backend's package
)


def short_reason(reason: str) -> str:
    """A reason short enough for a table cell: a known one's gist, else its start."""
    for pattern, short in _SHORT:
        match = re.search(pattern, reason)
        if match:
            return match.expand(short)
    return reason if len(reason) <= 40 else reason[:39].rstrip() + "…"
