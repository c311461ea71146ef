"""The upstream list of a census: every cause of its raised cells (census.raises), with the scenarios and pipelines it
hit and a command that reproduces it in one process from the diffusers checkout the census ran on

    python -m pytest_nosync census raises REPORT... --title "..." > docs/census/upstream-main.md

A raised cell is diffusers' to fix (the scenario set its feature as diffusers documents it; a kernel without support
for the inputs is not applicable, not a raise): this is what to report upstream.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from .. import ids
from .outcomes import Verdict
from .raises import causes
from .table import Row


def upstream_list(rows: Iterable[Row], environment: Mapping[str, Any], title: str) -> str:
    """Every cause of the census's raised cells as Markdown: what raised and where, the scenarios and pipelines it hit,
    and a command that reproduces it in one process from the diffusers checkout the census ran on."""
    cells = [(row, column, cell.outcome) for row in rows for column, cell in row.cells.items()]
    found = causes(outcome for _, _, outcome in cells)
    dtype = environment.get("dtype")
    option = f" --nosync-dtype={dtype}" if dtype and dtype != "float32" else ""
    lines = [
        f"# {title}",
        "",
        f"diffusers {environment.get('diffusers')}, torch {environment.get('torch')}, backend "
        f"{environment.get('backend')} ({environment.get('device')}){f', {dtype}' if dtype else ''}. "
        f"{sum(len(hit) for hit in found.outcomes.values())} cells raised, of {len(found.number)} causes. Each command "
        "runs one cell of the census again from the diffusers checkout, in one process.",
    ]
    for cause, number in found.number.items():
        hit = [(row, column) for row, column, o in cells if o is not None and o.exception and o.cause == cause
               and o.verdict == Verdict.RAISED]  # fmt: skip
        scenarios = Counter(ids.parse_column(column).scenario for _, column in hit)
        pipelines = sorted({row.pipeline for row, _ in hit})
        row, column = hit[0]
        check, scenario = ids.parse_column(column)
        node = f'"{ids.CensusId(row.tester, check, scenario)}"'
        untested = ids.parse_untested(row.tester)
        if untested is not None:  # its checks are added after collection, which a node id of theirs cannot name
            node = f'"{untested.sibling}" -k "{ids.UNTESTED} and {untested.pipeline_class}"'
        lines += [
            "",
            f"## r{number}. {found.outcomes[cause][0].cause_text()}",
            "",
            f"- {len(hit)} cell(s) under " + ", ".join(f"`{s}` ({n})" for s, n in scenarios.most_common()),
            f"- {len(pipelines)} pipeline(s): " + ", ".join(pipelines),
            f"- reproduce: `pytest {node} --nosync --nosync-checks={check} --nosync-scenarios={scenario}{option}`",
        ]
    return "\n".join(lines) + "\n"
