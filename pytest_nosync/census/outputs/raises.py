"""`census raises`: every cause of the census's raised cells, each with a command reproducing it, Markdown
(census.upstream renders it)."""

from __future__ import annotations

import argparse

from ..table import rows
from ..upstream import upstream_list
from .base import Output, census_of_parts, reports_argument


def arguments(parser: argparse.ArgumentParser) -> None:
    reports_argument(parser)
    parser.add_argument("--title", default="What raised", help="the page's heading")


def run(args: argparse.Namespace) -> int:
    reports, coverage, environment = census_of_parts(args.report)
    print(upstream_list(rows(reports, coverage), environment, args.title), end="")
    return 0


OUTPUT = Output(
    "raises", "every cause of the census's raised cells, with a command reproducing it (Markdown)", arguments, run
)
