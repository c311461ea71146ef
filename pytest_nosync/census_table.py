"""The census as a table: one row per pipeline tester class of a checked diffusers, from a run's JSON report.

    python -m pytest_nosync census report.json [--title "diffusers main at 58eb52c0, H100"] > docs/census-main.md

Each row: the pipeline, its tester, and per check what the run found — syncs per steady step (the steps after the
first, whose count is what every further step of a real call costs) with their places, graph breaks and recompiles,
steady-state growth, module-tree walks — or why the class was not checked. Known issues (the baseline's) count as
found: the census maps what the code does, the baseline only decides what fails.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from .findings import SYNC_KINDS, Kind, Location, Phase, Report, Status
from .source_identity import package_path

COUNTED = (Status.FAIL, Status.KNOWN, Status.BUDGET)  # what the code does, whatever the policy made of it
# `<module>::<TesterClass>::nosync[<check>]`; pytest-xdist's loadgroup appends `@<group>` to the ids it reports
_ITEM = re.compile(r"^(?P<tester>.+)::nosync\[(?P<check>[A-Za-z_]+)\](?:@.*)?$")


def census_item(nodeid: str) -> tuple[str, str] | None:
    """(tester class id, check) of a census item's node id, also as xdist reports it; None for another test."""
    match = _ITEM.match(nodeid)
    return (match["tester"], match["check"]) if match else None


def merge(parts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """One census from the census sections of runs over disjoint parts of a checkout."""
    merged: dict[str, Any] = {"classes": 0, "checked": 0, "not_checked": {}, "outcomes": {}}
    for part in parts:
        merged["classes"] += int(part.get("classes", 0))
        merged["checked"] += int(part.get("checked", 0))
        for reason, classes in part.get("not_checked", {}).items():
            merged["not_checked"].setdefault(reason, []).extend(classes)
        merged["outcomes"].update(part.get("outcomes", {}))
    return merged


def rows(reports: Iterable[Report], census: Mapping[str, Any]) -> list[dict[str, str]]:
    """The table's rows, sorted by pipeline: a dict of column → cell text."""
    by_class: dict[str, dict[str, Report]] = {}
    for report in reports:
        item = census_item(report.test_id)
        if item is not None:
            by_class.setdefault(item[0], {})[report.check] = report
    out = []
    not_checked = {cls: reason for reason, classes in census.get("not_checked", {}).items() for cls in classes}
    for class_id in sorted(set(by_class) | set(census.get("outcomes", {}))):
        checks = by_class.get(class_id, {})
        any_report = next(iter(checks.values()), None)
        pipeline = str(any_report.metrics.get("pipeline", "")) if any_report else ""
        row = {"pipeline": pipeline or "—", "tester": class_id.rsplit("/", 1)[-1]}
        if class_id in not_checked:
            row.update(syncs="—", graph="—", growth="—", walks="—", note=f"not checked: {not_checked[class_id]}")
        else:
            row.update(
                syncs=_syncs(checks.get("syncs")),
                graph=_places(checks.get("graph_breaks"), {Kind.GRAPH_BREAK, Kind.RECOMPILE}),
                growth=_places(checks.get("alloc_growth"), {Kind.ALLOC_GROWTH}),
                walks=_places(checks.get("host_overhead"), {Kind.HOST_OVERHEAD}),
                note=_errors(checks.values()),
            )
        out.append(row)
    return sorted(out, key=lambda r: (r["pipeline"], r["tester"]))


def render(reports: Iterable[Report], census: Mapping[str, Any], environment: Mapping[str, Any], title: str) -> str:
    table = rows(reports, census)
    found = sum(1 for r in table if r["syncs"] not in ("0", "—") and not r["syncs"].startswith("0:"))
    raised = sum(1 for r in table if r["note"].startswith("raises"))
    lines = [
        f"# {title}",
        "",
        f"diffusers {environment.get('diffusers')}, torch {environment.get('torch')}, backend "
        f"{environment.get('backend')} ({environment.get('device')}). {census.get('checked', 0)} of "
        f"{census.get('classes', 0)} pipeline tester classes checked; {found} with a sync in their steady steps, "
        f"{raised} raised.",
        "",
        "| pipeline | tester | syncs per steady step | graph breaks, recompiles | growth | tree walks | notes |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in table:
        cells = (row["pipeline"], row["tester"], row["syncs"], row["graph"], row["growth"], row["walks"], row["note"])
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def _in_steps(report: Report | None, kinds: set[Kind]) -> list[Any]:
    if report is None:
        return []
    return [f for f in report.findings if f.kind in kinds and f.phase == Phase.IN_STEP and f.status in COUNTED]


def _syncs(report: Report | None) -> str:
    """Syncs per steady step (the most any step after the first had) and their places, most frequent first."""
    if report is None:
        return "—"
    found = _in_steps(report, set(SYNC_KINDS))
    per_step: Counter[int] = Counter()
    for f in found:
        if f.step is not None and f.step > 0:
            per_step[f.step] += f.count
    steady = max(per_step.values(), default=0)
    if not found:
        return "0"
    return f"{steady}: {_top(found)}"


def _places(report: Report | None, kinds: set[Kind]) -> str:
    if report is None:
        return "—"
    found = _in_steps(report, kinds)
    return f"{sum(f.count for f in found)}: {_top(found)}" if found else "0"


def _top(findings: list[Any], n: int = 3) -> str:
    places: Counter[str] = Counter()
    for f in findings:
        places[_short(f.where)] += f.count
    shown = ", ".join(f"`{place}`" for place, _ in places.most_common(n))
    return shown + (f" (+{len(places) - n})" if len(places) > n else "")


def _short(where: Location) -> str:
    """The place inside its package (diffusers/schedulers/...), also for paths of another machine's checkout."""
    file = where.file.replace("\\", "/")
    if file.startswith("<"):  # code without a file (`<eval_with_key>.3`: an FX graph's generated forward)
        return str(where)
    at = file.rfind("/diffusers/")
    inside = file[at + 1 :] if at >= 0 else package_path(where.file)
    return str(Location(inside, where.line))


def _errors(reports: Iterable[Report]) -> str:
    for report in reports:
        for f in report.findings:
            if f.kind == Kind.ERROR:
                return f"raises: {str(f.detail).split(' (diffusers')[0][:120]}"
    return ""
