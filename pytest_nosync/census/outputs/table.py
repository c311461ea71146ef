"""`census table` (and `census REPORT...`): the census table, Markdown (census.table renders it)."""

from __future__ import annotations

import argparse

from ..table import render
from .base import Output, census_of_parts, reports_argument


def arguments(parser: argparse.ArgumentParser) -> None:
    reports_argument(parser)
    parser.add_argument("--title", default="Census", help="the page's heading")


def run(args: argparse.Namespace) -> int:
    reports, coverage, environment = census_of_parts(args.report)
    print(render(reports, coverage, environment, args.title), end="")
    return 0


OUTPUT = Output("table", "the census table (Markdown) of a --nosync-report (the default)", arguments, run)
