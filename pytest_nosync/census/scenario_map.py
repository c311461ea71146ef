"""The scenario census: pipelines by scenarios for one check, from a census run with --nosync-scenarios — as a Markdown
table (`python -m pytest_nosync census scenarios REPORT`) and as a heat map of its counts (syncs per steady step, graph
breaks...: `python -m pytest_nosync census plot REPORT --out map.png`, drawn by census.heat_map with matplotlib: the
`plot` extra).

A cell is the check's cell of that pipeline under that scenario (census.table.Cell): a number only where the check
reached its verdict; `raised`, `not checked: <why>` (the scenario does not apply, or the check could not run)
otherwise. The picture colours counts and leaves the others hatched with their one-word state, so no colour claims a
count that was not measured.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..checks import CHECKS
from ..findings import Report
from ..ids import parse_column
from ..scenarios import PLAIN, SCENARIOS
from .outcomes import Coverage
from .raises import Causes, causes
from .table import Cell, dtype_of, markdown_row, rows


@dataclass
class ScenarioMap:
    check: str
    pipelines: list[str]  # a row's label: the pipeline class (its tester where two share one)
    scenarios: list[str]
    cells: dict[tuple[str, str], Cell]  # (pipeline label, scenario) → cell

    def markdown(self, title: str, environment: Mapping[str, Any]) -> str:
        checked = sum(1 for c in self.cells.values() if c.checked)
        lines = [
            f"# {title}",
            "",
            f"diffusers {environment.get('diffusers')}, torch {environment.get('torch')}, backend "
            f"{environment.get('backend')} ({environment.get('device')}){dtype_of(environment)}. Check "
            f"`{self.check}`: {checked} of {len(self.cells)} pipeline × scenario cells reached a verdict. A cell is "
            "the check's count (for syncs: per steady step; `census table` names the places), or why it has none.",
            "",
            *self._against_plain(),
            "",
            "| pipeline | " + " | ".join(self.scenarios) + " |",
            "| --- | " + " | ".join("---" for _ in self.scenarios) + " |",
        ]  # fmt: skip
        raises = causes(cell.outcome for cell in self.cells.values())
        for pipeline in self.pipelines:
            cells = [_count(self.cells.get((pipeline, s)), raises) for s in self.scenarios]
            lines.append(markdown_row((pipeline, *cells)))
        notes = raises.footnotes()
        return "\n".join(lines + (["", *notes] if notes else [])) + "\n"

    def against_plain(self, scenario: str) -> tuple[int, int, int]:
        """(more, as many, fewer): the pipelines whose count under `scenario` is above, equal to, below the plain
        pipeline's, of those where both reached a verdict. What a user asks of a feature: does it add to my loop?"""
        more = same = fewer = 0
        for pipeline in self.pipelines:
            base, cell = self.cells.get((pipeline, PLAIN)), self.cells.get((pipeline, scenario))
            if base is None or cell is None or not (base.checked and cell.checked):
                continue
            more += cell.count > base.count
            same += cell.count == base.count
            fewer += cell.count < base.count
        return more, same, fewer

    def _against_plain(self) -> list[str]:
        if PLAIN not in self.scenarios:
            return []
        lines = ["", "Against the plain pipeline (pipelines where both reached a verdict):", ""]
        kept = []
        for scenario in self.scenarios:
            if scenario == PLAIN:
                continue
            more, same, fewer = self.against_plain(scenario)
            if more + same + fewer == 0:
                lines.append(f"- `{scenario}`: applied to no pipeline here")
                continue
            lines.append(f"- `{scenario}`: more in {more}, as many in {same}, fewer in {fewer}")
            kept += [scenario] if more == 0 else []
        clean = ", ".join(f"`{s}`" for s in kept) or "none"
        where = "any pipeline's steady steps" if self.check == "syncs" else f"any pipeline ({measure(self.check)})"
        return [*lines, "", f"Added nothing to {where}: {clean}."]


def measure(check: str) -> str:
    """What a cell of `check` counts, in the words of its census column: the map's sentences and the picture's colour
    bar say that and nothing else (a graph-break map is no map of syncs per steady step)."""
    known = CHECKS.get(check)
    return known.column if known is not None and known.column else check


def _count(cell: Cell | None, raises: Causes | None = None) -> str:
    """A map's cell: the count where the check reached its verdict, else its state and short reason (a raise: its
    cause's footnote)."""
    if cell is None:
        return "not run"
    return str(cell.count) if cell.checked else cell.text(raises)


def scenario_map(reports: Iterable[Report], coverage: Coverage, check: str = "syncs") -> ScenarioMap:
    """The map of `check` over the census's pipelines and scenarios (plain first, then the registry's order)."""
    table = rows(reports, coverage)
    columns = [parse_column(column) for r in table for column in r.cells]
    seen = {column.scenario for column in columns if column.check == check}
    scenarios = [s for s in SCENARIOS if s in seen] + sorted(seen - set(SCENARIOS))
    pipelines: dict[str, None] = {}
    cells: dict[tuple[str, str], Cell] = {}
    names = [r.pipeline for r in table]
    for row in table:
        label = row.pipeline if names.count(row.pipeline) == 1 else f"{row.pipeline} ({row.short_tester})"
        for column, cell in row.cells.items():
            name, scenario = parse_column(column)
            if name == check and cell.outcome is not None:
                pipelines[label] = None
                cells[(label, scenario)] = cell
    return ScenarioMap(check, list(pipelines), scenarios, cells)
