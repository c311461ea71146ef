"""`census new`: what a census's baseline did not know, Markdown, exit 1 when anything (a merged census of shards
judged by the baseline their runs wrote beside: action/census_merge.sh's verdict)."""

from __future__ import annotations

import argparse
from collections import Counter

from ...source_identity import short_place
from .base import Output, census_of

SHOWN = 50  # places listed; the rest are counted


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report", help="the census's --nosync-report (a `census merge` output among them)")


def run(args: argparse.Namespace) -> int:
    doc, reports, _ = census_of(args.report, required=False)
    # a writing run records what it would fail on: those findings are the ones a judged run fails on
    # a place inside its package, as every census output names it: not the machine's path, whatever the directory
    new = Counter((r.test_id, str(f.kind), short_place(f.where)) for r in reports for f in r.failures)
    gone = [r for r in doc.get("baseline_reviews", []) if r["status"] in ("fixed", "stale")]
    classes = doc.get("census", {}).get("classes", 0)
    print(f"## nosync census: {classes} tester classes, {len(reports)} checks\n")
    print(f"**{sum(new.values())} new** against the baseline" if new else "Nothing new against the baseline", end="")
    print(f"; {len(gone)} baseline entries fixed or stale (baseline.json leaves them out)." if gone else ".")
    print()
    for (test_id, kind, where), count in list(new.items())[:SHOWN]:
        print(f"- `{test_id}`: {kind} at `{where}`" + (f" ({count}×)" if count > 1 else ""))
    if len(new) > SHOWN:
        print(f"- ... and {len(new) - SHOWN} more places (census.json)")
    print()
    return 1 if new else 0


OUTPUT = Output("new", "what a census's baseline did not know, exit 1 when anything (Markdown)", arguments, run)
