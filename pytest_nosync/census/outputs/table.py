"""`census table` (and `census REPORT...`): the census table, Markdown (census.table renders it)."""

from __future__ import annotations

from ..table import render
from .base import page

OUTPUT = page("table", "the census table (Markdown) of a --nosync-report (the default)", "Census", render)
