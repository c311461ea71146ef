"""One census from the reports of its shards (`--nosync-shard=K/N`): the report one unsharded run gives, or one
sentence saying why these reports are not one census's shards (a shard missing or given twice, a shard of another
plan, selection, checkout or plugin version, a tester class in two shards). Never a partial census as a whole."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from .. import ids, run_report
from ..baseline import known_entry
from ..findings import Report
from .outcomes import Coverage, merge

# What every shard of one census shares, and what its sentence calls it when two differ.
AGREED = (
    ("count", "shard count"),
    ("plan", "shard plan (other durations or test modules)"),
    ("selection", "selection (test paths, -m, -k, checks, scenarios, dtype or backend)"),
    ("checkout", "checkout"),
    ("plugin", "pytest-nosync version"),
)


class MergeError(ValueError):
    """These reports are not the shards of one census; the message says why, one sentence."""


@dataclass(frozen=True)
class ShardReport:
    """One shard's report as read: its path, its document, its tests' reports and its census's coverage."""

    path: str
    doc: dict[str, Any]
    reports: list[Report]
    coverage: Coverage

    @property
    def shard(self) -> dict[str, Any]:
        return self.doc["shard"]


def check(parts: Sequence[ShardReport]) -> None:
    """MergeError unless the parts are every shard of one plan, once each, of one selection, checkout and version."""
    for part in parts:
        if not isinstance(part.doc.get("shard"), dict):
            raise MergeError(f"{part.path} is not a shard's report: run the census with --nosync-shard=K/N")
    first = parts[0]
    for part in parts[1:]:
        for key, said in AGREED:
            if part.shard.get(key) != first.shard.get(key):
                raise MergeError(f"{part.path} is a shard of another {said} than {first.path}")
        if part.doc.get("environment", {}).get("diffusers") != first.doc.get("environment", {}).get("diffusers"):
            raise MergeError(f"{part.path} is a shard of another diffusers version than {first.path}")
    by_index: dict[int, str] = {}
    for part in parts:
        index = part.shard["index"]
        if index in by_index:
            raise MergeError(f"{by_index[index]} and {part.path} are both shard {index}/{first.shard['count']}")
        by_index[index] = part.path
    missing = [str(i) for i in range(1, first.shard["count"] + 1) if i not in by_index]
    if missing:
        raise MergeError(
            f"shard(s) {', '.join(missing)} of {first.shard['count']} missing: a census merges every shard's report"
        )
    owner: dict[str, str] = {}
    for part in parts:
        for tester in part.coverage.outcomes:
            if owner.setdefault(tester, part.path) != part.path:
                raise MergeError(f"the tester class {tester} is in two shards, {owner[tester]} and {part.path}")
    _untested_once(parts)


def _untested_once(parts: Sequence[ShardReport]) -> None:
    """A class no tester names is checked through a sibling in one shard only, and not where a tester names it: else
    the shards split its family's testers, and each planned it from a part of them (as no one run would)."""
    untested: dict[str, str] = {}
    checked: dict[str, set[str]] = {}
    for part in parts:
        for report in part.reports:
            census = ids.parse(report.test_id)
            found = ids.parse_untested(census.tester) if census is not None else None
            name = found.pipeline_class if found is not None else str(report.metrics.get("pipeline", ""))
            if found is not None:
                untested.setdefault(name, part.path)
            if name:
                checked.setdefault(name, set()).add(part.path)
    for name, path in sorted(untested.items()):
        others = sorted(checked[name] - {path})
        if others:
            raise MergeError(
                f"the pipeline class {name} is checked through a sibling in {path} and again in {others[0]}: their "
                "family's test modules were packed into different shards (shard again with this pytest-nosync)"
            )


def merged(parts: Sequence[ShardReport]) -> dict[str, Any]:
    """The report of one run over every shard's modules (check it first): the tests' reports, the coverage in the
    order one run collects (module by module, each module's classes in its shard's order), the baseline's reviews."""
    parts = sorted(parts, key=lambda part: part.shard["index"])
    reports = [r for part in parts for r in part.reports]
    coverage = merge(part.coverage for part in parts)
    order = sorted(coverage.outcomes, key=lambda tester: PurePosixPath(ids.node_path(tester)).parts)
    coverage.outcomes = {tester: coverage.outcomes[tester] for tester in order}
    seconds: dict[str, float] = {}
    for part in parts:
        seconds.update(part.doc.get("seconds_per_target", {}))
    extra: dict[str, Any] = {
        "baseline_reviews": _reviews(parts, reports),
        "seconds_per_target": dict(sorted(seconds.items())),
    }
    if coverage.outcomes or coverage.import_failures:
        extra["census"] = coverage.to_dict()
    return run_report.document(reports, parts[0].doc.get("environment", {}), extra)


def _reviews(parts: Sequence[ShardReport], reports: list[Report]) -> list[dict[str, Any]]:
    """Each baseline entry's review once: a shard that ran an entry's scope without matching it says `fixed` or
    `stale`, which holds for the census only where no other shard matched it."""
    matched = {known_entry(f) for r in reports for f in r.findings} - {None}
    out: dict[int, dict[str, Any]] = {}
    for part in parts:
        for review in part.doc.get("baseline_reviews", []):
            if review["status"] in ("stale", "fixed") and review["entry"] in matched:
                continue
            out.setdefault(review["entry"], review)
    return [out[index] for index in sorted(out)]
