"""What every census output shares: its entry in the registry (`Output`), a run's report read as a census, and the
Markdown page of a census under a title that the table, raises and twins print (`page`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...cli_errors import UsageError, unreadable
from ...findings import Report
from ...run_report import read
from ..outcomes import CensusSchemaError, Coverage, merge


@dataclass(frozen=True)
class Output:
    """One output: `python -m pytest_nosync census <name>`, its help, the arguments it adds to its parser, and what
    it does with them (its exit status; a usage error is a UsageError, one sentence)."""

    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def census_of(path: str, required: bool = True) -> tuple[dict[str, Any], list[Report], Coverage]:
    """A report's document, its tests' reports and its census's coverage; a usage error for a file that is not one,
    or holds a census of another schema, or none where one is `required` (else an empty coverage)."""
    try:
        doc, found = read(path)
    except (OSError, ValueError) as exc:
        raise unreadable("the report", path, exc) from None
    if "census" not in doc and not required:
        return doc, found, Coverage()
    if "census" not in doc:
        raise UsageError(f"{path} has no census: run diffusers' tests with --nosync and --nosync-report")
    try:
        return doc, found, Coverage.from_dict(doc["census"], path)
    except CensusSchemaError as exc:
        raise UsageError(str(exc)) from None


def census_of_parts(paths: list[str]) -> tuple[list[Report], Coverage, dict[str, Any]]:
    """One census from the reports of a run in parts: their tests' reports, their merged coverage and the first
    environment a part names."""
    parts, reports, environment = [], [], {}
    for path in paths:
        doc, found, coverage = census_of(path)
        parts.append(coverage)
        reports += found
        environment = environment or doc.get("environment") or {}
    return reports, merge(parts), environment


def reports_argument(parser: argparse.ArgumentParser) -> None:
    """REPORT...: a run's report, or several (one census run in parts)."""
    parser.add_argument("report", nargs="+", help="the run's --nosync-report (several: one census run in parts)")


def page(
    name: str, help: str, title: str, render: Callable[[list[Report], Coverage, dict[str, Any], str], str]
) -> Output:
    """An output printing one Markdown page: the census of its REPORT... rendered (`render(reports, coverage,
    environment, title)`) under `--title`, `title` by default."""

    def arguments(parser: argparse.ArgumentParser) -> None:
        reports_argument(parser)
        parser.add_argument("--title", default=title, help="the page's heading")

    def run(args: argparse.Namespace) -> int:
        reports, coverage, environment = census_of_parts(args.report)
        print(render(reports, coverage, environment, args.title), end="")
        return 0

    return Output(name, help, arguments, run)
