"""The scenario census: pipelines by scenarios for one check, from a census run with --nosync-scenarios — as a Markdown
table (`python -m pytest_nosync census scenarios REPORT`) and as a heat map of syncs per steady step
(`python -m pytest_nosync census plot REPORT --out map.png`, matplotlib: the `plot` extra).

A cell is the check's cell of that pipeline under that scenario (census.table.Cell): a number only where the check
reached its verdict; `raised`, `not checked: <why>` (the scenario does not apply, or the check could not run)
otherwise. The picture colours counts and leaves the others hatched with their one-word state, so no colour claims a
count that was not measured.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..findings import Report
from ..scenarios import PLAIN, SCENARIOS
from .outcomes import Coverage, Verdict
from .table import Cell, rows


@dataclass
class ScenarioMap:
    check: str
    pipelines: list[str]  # a row's label: the pipeline class (its tester where two share one)
    scenarios: list[str]
    cells: dict[tuple[str, str], Cell]  # (pipeline label, scenario) → cell

    def markdown(self, title: str, environment: Mapping[str, Any]) -> str:
        checked = sum(1 for c in self.cells.values() if c.checked)
        clean = [s for s in self.scenarios if self._clean(s)]
        lines = [
            f"# {title}",
            "",
            f"diffusers {environment.get('diffusers')}, torch {environment.get('torch')}, backend "
            f"{environment.get('backend')} ({environment.get('device')}). Check `{self.check}`: {checked} of "
            f"{len(self.cells)} pipeline × scenario cells reached a verdict. A cell is the check's count (for syncs: "
            "per steady step), or why it has none.",
            "",
            "Scenarios that kept every pipeline they applied to at zero: " + (", ".join(f"`{s}`" for s in clean) or
                                                                                "none") + ".",
            "",
            "| pipeline | " + " | ".join(self.scenarios) + " |",
            "| --- | " + " | ".join("---" for _ in self.scenarios) + " |",
        ]  # fmt: skip
        for pipeline in self.pipelines:
            cells = [self.cells[(pipeline, s)].text() if (pipeline, s) in self.cells else "not run"
                     for s in self.scenarios]  # fmt: skip
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in (pipeline, *cells)) + " |")
        return "\n".join(lines) + "\n"

    def _clean(self, scenario: str) -> bool:
        cells = [c for (_, s), c in self.cells.items() if s == scenario and c.checked]
        return bool(cells) and all(c.count == 0 for c in cells)


def scenario_map(reports: Iterable[Report], coverage: Coverage, check: str = "syncs") -> ScenarioMap:
    """The map of `check` over the census's pipelines and scenarios (plain first, then the registry's order)."""
    table = rows(reports, coverage)
    seen = {column.partition("-")[2] or PLAIN for r in table for column in r.cells if column.partition("-")[0] == check}
    scenarios = [s for s in SCENARIOS if s in seen] + sorted(seen - set(SCENARIOS))
    pipelines: dict[str, None] = {}
    cells: dict[tuple[str, str], Cell] = {}
    names = [r.pipeline for r in table]
    for row in table:
        label = row.pipeline if names.count(row.pipeline) == 1 else f"{row.pipeline} ({row.short_tester})"
        for column, cell in row.cells.items():
            name, _, scenario = column.partition("-")
            if name == check and cell.outcome is not None:
                pipelines[label] = None
                cells[(label, scenario or PLAIN)] = cell
    return ScenarioMap(check, list(pipelines), scenarios, cells)


STATES = {Verdict.RAISED: "raised", Verdict.NOT_CHECKED: "not checked", Verdict.SKIPPED: "n/a"}


def plot(data: ScenarioMap, path: str, title: str) -> None:
    """The heat map, written to `path` (PNG, SVG or PDF by its suffix). Needs matplotlib (`pip install
    pytest-nosync[plot]`)."""
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt
    import numpy as np

    counts = np.full((len(data.pipelines), len(data.scenarios)), np.nan)
    for (pipeline, scenario), cell in data.cells.items():
        if cell.checked:
            counts[data.pipelines.index(pipeline), data.scenarios.index(scenario)] = cell.count
    width = 2.5 + 0.55 * len(data.scenarios)
    height = 1.6 + 0.28 * len(data.pipelines)
    figure, axes = plt.subplots(figsize=(width, height))
    axes.set_facecolor("#eeeeee")  # cells without a verdict: no colour, their state written in them
    image = axes.imshow(np.ma.masked_invalid(counts), cmap="Reds", aspect="auto", vmin=0,
                        vmax=max(1.0, float(np.nanmax(counts)) if np.isfinite(counts).any() else 1.0))  # fmt: skip
    for (pipeline, scenario), cell in data.cells.items():
        y, x = data.pipelines.index(pipeline), data.scenarios.index(scenario)
        text = str(cell.count) if cell.checked else STATES.get(cell.outcome.verdict, "") if cell.outcome else ""
        axes.text(x, y, text, ha="center", va="center", fontsize=6 if not cell.checked else 7,
                  color="black" if not cell.checked or cell.count < 0.6 * image.norm.vmax else "white")  # fmt: skip
    axes.set_xticks(range(len(data.scenarios)), data.scenarios, rotation=60, ha="right", fontsize=7)
    axes.set_yticks(range(len(data.pipelines)), data.pipelines, fontsize=7)
    axes.set_title(title, fontsize=9)
    figure.colorbar(image, ax=axes, fraction=0.03, pad=0.02, label=f"{data.check} per steady step")
    figure.tight_layout()
    figure.savefig(path, dpi=150)
    plt.close(figure)
