"""Each Modular Diffusers config of a census beside its classic twin: what one finds in its steady steps that the
other does not, check by check, at the line (`python -m pytest_nosync census twins`).

A modular config's twin is the classic pipeline its class and its config's workflow name: `FluxModularPipeline`
tested by `TestFluxImg2ImgModularPipelineFast` is paired with the census's `FluxImg2ImgPipeline` row, else with
`FluxPipeline`'s; a config whose twin the census has no row of is listed as such. Only cells both reached a verdict in
are compared: a raise or a check not run says nothing of what the code does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import ids
from .table import Cell, Row, _top, column_title, dtype_of, markdown_row

MODULAR = "ModularPipeline"
# the workflow words of modular configs' names, as the classic class names spell them
WORKFLOWS = {"Img2Img": "Img2Img", "Inpaint": "Inpaint", "Image2Video": "ImageToVideo", "ImageToVideo": "ImageToVideo",
             "Edit": "Edit", "EditPlus": "EditPlus", "Layered": "Layered", "Control": "Control"}  # fmt: skip
_CONFIG = re.compile(r"^(?:Test)?(?P<core>.+?)ModularPipeline")


@dataclass(frozen=True)
class Difference:
    """One check of one modular config against its twin's: both cells, and the places only each found."""

    column: str
    modular: Cell
    classic: Cell
    only_modular: Mapping[str, int]
    only_classic: Mapping[str, int]


@dataclass(frozen=True)
class Pair:
    modular: Row
    classic: Row | None
    differences: tuple[Difference, ...] = ()
    compared: int = 0  # the checks both reached a verdict in


def twin_names(pipeline: str, config: str) -> list[str]:
    """The classic class names a modular config's twin may have, best first."""
    base = pipeline.removesuffix(MODULAR)
    match = _CONFIG.match(config)
    core = match["core"] if match else ""
    words = [classic for word, classic in sorted(WORKFLOWS.items(), key=lambda w: -len(w[0])) if word in core]
    names = [f"{base}{word}Pipeline" for word in words if word not in base]
    return [*dict.fromkeys([*names, f"{base}Pipeline"])]


def pairs(rows: Iterable[Row]) -> list[Pair]:
    """Every modular row with its twin (None where the census has none) and their differing checks."""
    rows = list(rows)
    classic: dict[str, Row] = {}
    for row in rows:
        if MODULAR not in row.pipeline:
            classic.setdefault(row.pipeline, row)  # rows are sorted: the first tester of a class
    out = []
    for row in rows:
        if MODULAR not in row.pipeline:
            continue
        names = twin_names(row.pipeline, ids.tester_class(row.tester))
        twin = next((classic[name] for name in names if name in classic), None)
        if twin is None:
            out.append(Pair(row, None))
            continue
        both = [c for c, cell in row.cells.items() if cell.checked and c in twin.cells and twin.cells[c].checked]
        out.append(Pair(row, twin, _differences(row, twin, both), len(both)))
    return out


def _differences(modular: Row, classic: Row, columns: Iterable[str]) -> tuple[Difference, ...]:
    out = []
    for column in columns:
        cell, other = modular.cells[column], classic.cells[column]
        only_m = {p: n for p, n in cell.places.items() if p not in other.places}
        only_c = {p: n for p, n in other.places.items() if p not in cell.places}
        if only_m or only_c or cell.count != other.count:
            out.append(Difference(column, cell, other, only_m, only_c))
    return tuple(out)


def render(found: list[Pair], environment: Mapping[str, Any], title: str) -> str:
    paired = [p for p in found if p.classic is not None and p.compared]
    same = sum(1 for p in paired if not p.differences)
    lines = [
        f"# {title}",
        "",
        f"diffusers {environment.get('diffusers')}, torch {environment.get('torch')}, backend "
        f"{environment.get('backend')} ({environment.get('device')}){dtype_of(environment)}. {len(found)} modular "
        f"config(s), {len(paired)} compared with a classic twin in this census (a check both reached a verdict in): "
        f"{same} find the same places in every such check, {len(paired) - same} differ (below).",
        "",
        "| modular config | classic twin | check | modular | classic | only the modular finds | only the classic finds "
        "|",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for pair in found:
        config = f"{pair.modular.pipeline} ({pair.modular.short_tester})"
        if pair.classic is None:
            lines.append(f"| {config} | none in this census | | | | | |")
            continue
        twin = f"{pair.classic.pipeline} ({pair.classic.short_tester})"
        if not pair.compared:
            lines.append(f"| {config} | {twin} | none both reached a verdict in | | | | |")
        elif not pair.differences:
            lines.append(
                f"| {config} | {twin} | the {pair.compared} both reached a verdict in | the same | the same | | |"
            )
        for d in pair.differences:
            only = (_top(d.only_modular) if d.only_modular else "", _top(d.only_classic) if d.only_classic else "")
            cells = (config, twin, column_title(d.column), d.modular.text(), d.classic.text(), *only)
            lines.append(markdown_row(cells))
    return "\n".join(lines) + "\n"
