"""The scenario census's heat map (census.scenario_map's data), drawn with matplotlib: the one module that imports
it, an optional dependency (`pip install 'pytest-nosync[plot]'`); `census plot` imports this module where it draws."""

from __future__ import annotations

import textwrap
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display needed: before pyplot is imported
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import SymLogNorm

from .outcomes import Verdict
from .scenario_map import ScenarioMap, measure


def formats() -> dict[str, str]:
    """The picture formats the Agg canvas writes, by file extension."""
    return FigureCanvasAgg.get_supported_filetypes()


STATES = {Verdict.RAISED: "raised", Verdict.NOT_CHECKED: "not checked", Verdict.SKIPPED: "n/a"}


def plot(data: ScenarioMap, path: str, title: str) -> None:
    """The heat map, written to `path` (PNG, SVG or PDF by its suffix): counts on a log scale (zero the lightest), the
    cells without a verdict grey with their state."""
    counts = np.full((len(data.pipelines), len(data.scenarios)), np.nan)
    for (pipeline, scenario), cell in data.cells.items():
        if cell.checked:
            counts[data.pipelines.index(pipeline), data.scenarios.index(scenario)] = cell.count
    top = float(np.nanmax(counts)) if np.isfinite(counts).any() else 1.0
    label_width = max((len(p) for p in data.pipelines), default=10) * 0.065
    figure, axes = plt.subplots(
        figsize=(2.0 + label_width + 0.6 * len(data.scenarios), 2.2 + 0.2 * len(data.pipelines)),
        layout="constrained",
    )
    axes.set_facecolor("#d9d9d9")  # cells without a verdict: no colour, their state written in them
    norm = SymLogNorm(linthresh=1.0, vmin=0.0, vmax=max(1.0, top))  # 0, 1, 10, 100...: a few syncs stay visible
    image = axes.imshow(np.ma.masked_invalid(counts), cmap="Reds", aspect="auto", norm=norm, interpolation="none")
    for (pipeline, scenario), cell in data.cells.items():
        y, x = data.pipelines.index(pipeline), data.scenarios.index(scenario)
        if cell.checked:
            text, color = str(cell.count), "white" if norm(cell.count) > 0.6 else "black"
        else:
            text, color = STATES.get(cell.outcome.verdict, "") if cell.outcome else "", "#555555"
        axes.text(x, y, text, ha="center", va="center", fontsize=6, color=color)
    axes.set_xticks(range(len(data.scenarios)), data.scenarios, rotation=50, ha="right", fontsize=7)
    axes.set_yticks(range(len(data.pipelines)), data.pipelines, fontsize=6)
    axes.xaxis.set_ticks_position("top")
    axes.xaxis.set_label_position("top")
    axes.set_title(title, fontsize=9)
    # the bar's label in lines of a few words, in the map's type size: it runs along a bar as tall as the map
    label = "\n".join(textwrap.wrap(f"{measure(data.check)} (log scale)", 24))
    bar = figure.colorbar(image, ax=axes, fraction=0.02, pad=0.01, label=label)
    bar.ax.tick_params(labelsize=7)
    bar.ax.yaxis.label.set_fontsize(7)
    _grow_to_hold_the_bars_label(figure, bar)
    figure.savefig(path, dpi=100 if len(data.pipelines) > 40 else 150)
    plt.close(figure)


def _grow_to_hold_the_bars_label(figure: Any, bar: Any) -> None:
    """Grow the figure until the colour bar's label is inside it: the layout keeps text inside the picture across the
    bar, not along it, and a map of a few pipelines had its label cut at the picture's top and bottom."""
    for _ in range(3):  # the layout moves with the size: measure again
        figure.draw_without_rendering()
        label, margin = bar.ax.yaxis.label.get_window_extent(), 0.05 * figure.dpi  # (saved at another dpi: a margin)
        over = max(0.0, margin - label.y0) + max(0.0, label.y1 + margin - figure.bbox.y1)
        if over <= 0:
            return
        width, height = figure.get_size_inches()
        figure.set_size_inches(width, height + over / figure.dpi + 0.1)
