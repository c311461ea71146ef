"""Compare two runs' reports: which in-step findings both saw, which only one did.

    python -m pytest_nosync compare gpu-report.json emulated-report.json

Made for checking CPU emulation against a GPU run of the same suite on the same diffusers: the first
report is the reference, so "only in the first" are the second's misses and "only in the second" its
false alarms. Places are compared by their last path components and line, so runs from different
machines (different install prefixes) line up.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .findings import Location, Phase, Report

Key = tuple[str, str, int | None]  # (kind family, place, step)


def place(where: Location, parts: int = 3) -> str:
    """The place by its last path components and line: the same on machines with different install prefixes."""
    tail = "/".join(where.file.replace("\\", "/").split("/")[-parts:])
    return str(Location(tail, where.line))


def _keys(report: Report) -> set[Key]:
    return {(f.kind, place(f.where), f.step) for f in report.findings if f.phase == Phase.IN_STEP}


@dataclass
class ReportComparison:
    both: set[tuple[str, Key]] = field(default_factory=set)
    only_reference: set[tuple[str, Key]] = field(default_factory=set)
    only_other: set[tuple[str, Key]] = field(default_factory=set)
    failed_only_other: list[str] = field(default_factory=list)  # tests only the other run failed
    tests: int = 0

    @property
    def recall(self) -> float:
        seen = len(self.both) + len(self.only_reference)
        return len(self.both) / seen if seen else 1.0


class NothingInCommon(ValueError):
    """The two reports share no test: a recall would be a number of nothing."""


def compare(reference: Iterable[Report], other: Iterable[Report]) -> ReportComparison:
    """Raises NothingInCommon when the two runs share no test (check)."""
    ref = {(r.test_id, r.check): r for r in reference}
    oth = {(r.test_id, r.check): r for r in other}
    if not set(ref) & set(oth):
        raise NothingInCommon("the two reports have no test in common: nothing to compare")
    out = ReportComparison()
    for key in sorted(set(ref) & set(oth)):
        out.tests += 1
        a, b = _keys(ref[key]), _keys(oth[key])
        test = f"{key[0]} [{key[1]}]"
        out.both |= {(test, k) for k in a & b}
        out.only_reference |= {(test, k) for k in a - b}
        out.only_other |= {(test, k) for k in b - a}
        if oth[key].passed is False and ref[key].passed is not False:
            out.failed_only_other.append(test)
    return out


def render(comparison: ReportComparison, names: tuple[str, str] = ("reference", "other")) -> str:
    lines = [
        f"{comparison.tests} tests in both runs; in-step findings (kind, place, step): "
        f"{len(comparison.both)} in both, {len(comparison.only_reference)} only in {names[0]}, "
        f"{len(comparison.only_other)} only in {names[1]}; recall of {names[1]}: {comparison.recall:.1%}",
    ]
    for title, rows in (
        (f"only in {names[0]}", comparison.only_reference),
        (f"only in {names[1]}", comparison.only_other),
    ):
        for test, (kind, where, step) in sorted(rows):
            lines.append(f"  {title}: {test}: {kind} {where} step {step}")
    for test in comparison.failed_only_other:
        lines.append(f"  failed only in {names[1]}: {test}")
    return "\n".join(lines)
