"""`census raises`: every cause of the census's raised cells, each with a command reproducing it, Markdown
(census.upstream renders it)."""

from __future__ import annotations

from typing import Any

from ...findings import Report
from ..outcomes import Coverage
from ..table import rows
from ..upstream import upstream_list
from .base import page


def render(reports: list[Report], coverage: Coverage, environment: dict[str, Any], title: str) -> str:
    return upstream_list(rows(reports, coverage), environment, title)


OUTPUT = page(
    "raises",
    "every cause of the census's raised cells, with a command reproducing it (Markdown)",
    "What raised",
    render,
)
