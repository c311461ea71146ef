"""`census merge`: one census from the reports of its shards (census.merge), written where --out says; the shards'
baseline writes (--baselines) merged into the baseline one unsharded run writes (--baseline-out). Reports that are
not every shard of one census are a usage error, one sentence, and nothing is written."""

from __future__ import annotations

import argparse
import json

from ... import baseline, ids, run_report
from ...cli_errors import UsageError, check_writable, unreadable, write
from .. import shards
from ..merge import MergeError, ShardReport, check, merged
from .base import Output, census_of


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report", nargs="+", help="every shard's --nosync-report (one per --nosync-shard=K/N)")
    parser.add_argument("--out", required=True, help="the merged census's report (.json, or .json.gz)")
    parser.add_argument("--baselines", nargs="+", default=[], metavar="BASELINE",
                        help="the shards' --nosync-baseline-write files, in the order of their reports")  # fmt: skip
    parser.add_argument("--baseline-out", help="the merged baseline (with --baselines)")
    parser.add_argument("--durations", help="the --nosync-durations file to update with the census items' durations")


def run(args: argparse.Namespace) -> int:
    if bool(args.baselines) != bool(args.baseline_out):
        raise UsageError("--baselines and --baseline-out go together: the shards' baseline writes, where to merge them")
    if args.baselines and len(args.baselines) != len(args.report):
        given = f"{len(args.baselines)} files for {len(args.report)} shard reports"
        raise UsageError(f"--baselines: {given}: give one per shard, in the reports' order")
    check_writable("--out", args.out, "census.json")
    check_writable("--baseline-out", args.baseline_out, "nosync-baseline.json")
    check_writable("--durations", args.durations, "nosync-durations.json")
    try:
        recorded = shards.read_durations(args.durations) if args.durations else {}
    except shards.ShardError as exc:
        raise UsageError(f"--durations: {exc}") from None
    # a shard whose modules hold no tester class has no census in its report: its coverage is empty
    parts = [ShardReport(path, *census_of(path, required=False)) for path in args.report]
    try:
        check(parts)
    except MergeError as exc:
        raise UsageError(str(exc)) from None
    writes = []  # read before anything is written: a baseline that cannot be read leaves no output behind
    if args.baselines:
        writes = [(_entries(path), part.reports) for path, part in zip(args.baselines, parts, strict=True)]
    doc = merged(parts)
    write("--out", args.out, lambda: run_report.write(args.out, doc))
    if writes:
        written_with = _written_with(args.baselines[0])
        entries = baseline.merged_writes(writes)
        write("--baseline-out", args.baseline_out, lambda: baseline.write(args.baseline_out, entries, written_with))
    if args.durations:
        measured = {r.test_id: r.metrics["duration_s"] for part in parts for r in part.reports
                    if ids.parse(r.test_id) is not None and "duration_s" in r.metrics}  # fmt: skip
        write("--durations", args.durations, lambda: shards.write_durations(args.durations, {**recorded, **measured}))
    classes = doc.get("census", {}).get("classes", 0)
    print(f"census merge: {len(parts)} shards, {len(doc['tests'])} test reports, {classes} tester classes → {args.out}")
    return 0


def _entries(path: str) -> list[baseline.Entry]:
    try:
        return baseline.Baseline.load(path).entries
    except baseline.BaselineError as exc:
        raise UsageError(f"--baselines: {exc}") from None


def _written_with(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh).get("written_with")
    except (OSError, ValueError) as exc:
        raise unreadable("the baseline", path, exc) from None


OUTPUT = Output(
    "merge",
    "one census from its shards' reports (--nosync-shard=K/N), the report one unsharded run writes; exit 4 when they "
    "are not every shard of one census",
    arguments,
    run,
)
