"""`census diff`: what changed between two censuses, Markdown for a pull request (census.diff); exit status 1 when
anything got worse from the base to the head."""

from __future__ import annotations

import argparse

from ...cli_errors import UsageError
from ..diff import NothingInCommon, diff
from .base import Output, census_of


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("base", help="the base's --nosync-report (e.g. the merge base's)")
    parser.add_argument("head", help="the head's --nosync-report (e.g. the pull request's)")
    parser.add_argument("--title", default="nosync census", help="the comment's heading")


def run(args: argparse.Namespace) -> int:
    base, head = (census_of(path) for path in (args.base, args.head))
    try:
        result = diff(base[1], base[2], head[1], head[2])
    except NothingInCommon as exc:
        raise UsageError(f"{args.base} and {args.head}: {exc}") from None
    print(result.markdown(args.title, base[0].get("environment", {}), head[0].get("environment", {})), end="")
    return 1 if result.worse else 0


OUTPUT = Output(
    "diff",
    "what changed between two censuses, as Markdown for a pull request; exit 1 when anything got worse",
    arguments,
    run,
)
