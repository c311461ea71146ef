"""`census twins`: each Modular Diffusers config against its classic twin, at the line, Markdown
(census.modular_twins renders it)."""

from __future__ import annotations

from typing import Any

from ...findings import Report
from ..modular_twins import pairs
from ..modular_twins import render as render_pairs
from ..outcomes import Coverage
from ..table import rows
from .base import page


def render(reports: list[Report], coverage: Coverage, environment: dict[str, Any], title: str) -> str:
    return render_pairs(pairs(rows(reports, coverage)), environment, title)


OUTPUT = page(
    "twins",
    "each Modular Diffusers config against its classic twin: what one finds that the other does not (Markdown)",
    "Modular configs and their classic twins",
    render,
)
