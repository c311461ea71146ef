"""`census scenarios`: the scenario census, pipelines by scenarios for one check, Markdown (census.scenario_map)."""

from __future__ import annotations

import argparse
from typing import Any

from ...cli_errors import UsageError
from ..outcomes import merge
from ..scenario_map import ScenarioMap, scenario_map
from .base import Output, census_of


def arguments(parser: argparse.ArgumentParser) -> None:
    """Those of the scenario census's outputs (`census plot` adds its picture's file)."""
    parser.add_argument("report", nargs="+", help="a census run's --nosync-report with --nosync-scenarios (or parts)")
    parser.add_argument("--check", default="syncs", help="the check mapped (default syncs)")
    parser.add_argument("--title", default="Scenario census", help="the heading")


def mapped(paths: list[str], check: str) -> tuple[ScenarioMap, dict[str, Any]]:
    """The scenario census of the reports' check, and the first report's environment; a usage error where the
    census has no such check."""
    parts = [census_of(path) for path in paths]
    data = scenario_map([r for _, found, _ in parts for r in found], merge(c for _, _, c in parts), check)
    if not data.cells:
        raise UsageError(f"{', '.join(paths)}: no check {check!r} in the census: census with it, or name another")
    return data, parts[0][0].get("environment", {})


def run(args: argparse.Namespace) -> int:
    data, environment = mapped(args.report, args.check)
    print(data.markdown(args.title, environment), end="")
    return 0


OUTPUT = Output("scenarios", "the scenario census (Markdown): pipelines by scenarios for one check", arguments, run)
