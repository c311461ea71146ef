"""docs/options.md is generated from the option table: an option added, renamed or re-described in the table and not
in the page (or the other way round) fails here, with the command that regenerates it."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_nosync.option_table import TABLE, reference_markdown

PAGE = Path(__file__).resolve().parents[2] / "docs" / "options.md"


def test_the_options_page_is_the_table() -> None:
    assert PAGE.read_text(encoding="utf-8") == reference_markdown(), (
        "docs/options.md is out of date: python -m pytest_nosync options > docs/options.md"
    )


def test_every_row_is_on_the_page() -> None:
    page = reference_markdown()
    for row in TABLE:
        assert (row.cli or f"`{row.name}=`") in page, row.name


def test_every_default_is_written_as_the_user_writes_the_option() -> None:
    """Not a Python repr: the --nosync-trace row's default was `TraceConfig(mode='on-failure', directory=...)`."""
    page = reference_markdown()
    assert "| `--nosync-trace` | `nosync_trace` | on-failure |" in page
    for line in page.splitlines():
        if line.startswith("| `--") or line.startswith("| —"):
            assert not re.search(r"\b[A-Z]\w*\(\w+=", line), line
