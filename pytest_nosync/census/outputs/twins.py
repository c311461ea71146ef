"""`census twins`: each Modular Diffusers config against its classic twin, at the line, Markdown
(census.modular_twins renders it)."""

from __future__ import annotations

import argparse

from ..modular_twins import pairs, render
from ..table import rows
from .base import Output, census_of_parts, reports_argument


def arguments(parser: argparse.ArgumentParser) -> None:
    reports_argument(parser)
    parser.add_argument("--title", default="Modular configs and their classic twins", help="the page's heading")


def run(args: argparse.Namespace) -> int:
    reports, coverage, environment = census_of_parts(args.report)
    print(render(pairs(rows(reports, coverage)), environment, args.title), end="")
    return 0


OUTPUT = Output(
    "twins",
    "each Modular Diffusers config against its classic twin: what one finds that the other does not (Markdown)",
    arguments,
    run,
)
