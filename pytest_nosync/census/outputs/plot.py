"""`census plot`: the scenario census as a heat map, a picture (census.heat_map draws it with matplotlib, the `plot`
extra)."""

from __future__ import annotations

import argparse
from pathlib import Path
from types import ModuleType

from ...cli_errors import UsageError, check_writable, write
from . import scenarios
from .base import Output


def arguments(parser: argparse.ArgumentParser) -> None:
    scenarios.arguments(parser)
    parser.add_argument("--out", required=True, help="the picture's file")


def run(args: argparse.Namespace) -> int:
    heat_map = check_picture(args.out)
    data, _ = scenarios.mapped(args.report, args.check)
    check_writable("--out", args.out, "scenarios.png")
    write("--out", args.out, lambda: heat_map.plot(data, args.out, args.title))
    print(f"wrote {args.out}: {len(data.pipelines)} pipelines by {len(data.scenarios)} scenarios")
    return 0


def check_picture(out: str) -> ModuleType:
    """matplotlib is here and writes the format `out`'s extension names: census.heat_map, which draws with it. An
    extension is required: without one matplotlib writes `<out>.png`, not the file named (and checked writable), and
    an unknown one raised at the end."""
    try:
        from .. import heat_map  # an optional dependency: matplotlib, which heat_map imports
    except ImportError:
        raise UsageError("census plot needs matplotlib: pip install 'pytest-nosync[plot]'") from None
    suffix = Path(out).suffix.removeprefix(".").lower()
    formats = heat_map.formats()
    if not suffix:
        raise UsageError(f"--out {out}: name the picture's format by its extension ({out}.png, .svg, .pdf, ...)")
    if suffix not in formats:
        names = ", ".join(f".{f}" for f in sorted(formats))
        raise UsageError(f"--out {out}: matplotlib writes no .{suffix} file; name one of {names}")
    return heat_map


OUTPUT = Output(
    "plot",
    "the scenario census as a heat map (PNG, SVG or PDF; needs matplotlib: the `plot` extra)",
    arguments,
    run,
)
