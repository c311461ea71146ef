"""Judge findings: allow-list, known-issues baseline, outside-steps rule and budget give each a status."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from .findings import Finding, Kind, KnownMatch, Location, Phase, Report, Status, not_checked_finding

_LINE_SUFFIX = re.compile(r":(\d+|\*|\d+-\d+)$")


@dataclass(frozen=True)
class AllowEntry:
    """A place where a finding is accepted, with the reason a reviewer can read.

    `pattern` is `file:line`, `file:*` or a glob on the file (`*/schedulers/*.py`); a bare file name
    matches that file anywhere. `kinds` limits the entry to some kinds (all when empty).
    """

    pattern: str
    reason: str
    kinds: tuple[str, ...] = ()

    def matches(self, finding: Finding) -> bool:
        if self.kinds and finding.kind not in self.kinds:
            return False
        return where_matches(self.pattern, finding.where)


def where_matches(pattern: str, where: Location) -> bool:
    """Match `pattern` (file[:line|:*|:a-b], globs allowed) against a finding's place."""
    filename, line = where.file, ("" if where.line is None else str(where.line))  # 0: a place without a line
    suffix = _LINE_SUFFIX.search(pattern)
    file_pattern = pattern[: suffix.start()] if suffix else pattern
    if suffix:
        want = suffix.group(1)
        if want != "*":
            low, _, high = want.partition("-")
            if not line.isdigit() or not int(low) <= int(line) <= int(high or low):
                return False
    filename = filename.replace("\\", "/")
    file_pattern = file_pattern.replace("\\", "/")
    return any(fnmatch.fnmatchcase(filename, p) for p in (file_pattern, "*/" + file_pattern.lstrip("/")))


@dataclass(frozen=True)
class Policy:
    """How a test judges its findings. budget: how many failing events are tolerated (sum of counts)."""

    budget: int = 0
    allow: tuple[AllowEntry, ...] = ()
    count_outside_steps: bool = False


# The known-issues baseline entry a finding matches, or None.
KnownMatcher = Callable[[Finding], "KnownMatch | None"]


def judge(findings: Iterable[Finding], policy: Policy, known: KnownMatcher | None = None) -> tuple[list[Finding], bool]:
    """Give every finding a status and say whether the test passes. An `error` (the code under test raised) and a
    `not_checked` fail wherever they happened and whatever the budget, unless the allow-list or the baseline names
    them."""
    judged: list[Finding] = []
    counted: list[int] = []
    for finding in findings:
        entry = next((e for e in policy.allow if e.matches(finding)), None)
        match = known(finding) if known is not None and entry is None else None
        if entry is not None:
            judged.append(finding.with_status(Status.ALLOWED, entry.reason))
        elif match is not None:
            judged.append(finding.with_status(Status.KNOWN, str(match), match))
        elif finding.kind in (Kind.ERROR, Kind.NOT_CHECKED):
            judged.append(finding.with_status(Status.FAIL))
        elif finding.phase != Phase.IN_STEP and not policy.count_outside_steps:
            judged.append(finding.with_status(Status.OUTSIDE, "outside the denoising steps (allowed)"))
        else:
            counted.append(len(judged))
            judged.append(finding.with_status(Status.FAIL))
    events = sum(judged[i].count for i in counted)
    if counted and events <= policy.budget:
        note = f"{events} event(s) within the budget of {policy.budget}"
        for i in counted:
            judged[i] = replace(judged[i], status=Status.BUDGET, note=note)
    passed = not any(f.status == Status.FAIL for f in judged)
    return judged, passed


def rejudge(report: Report, policy: Policy, known: KnownMatcher | None = None) -> Report:
    """The report judged afresh under another policy or baseline (e.g. a rank report from torchrun, judged by the
    test that launched the ranks), dropping the statuses its findings had."""
    judged, passed = judge([f.with_status(Status.NEW) for f in report.findings], policy, known)
    return replace(report, findings=judged, passed=passed)


def add_not_checked(report: Report, reason: str, policy: Policy, known: KnownMatcher | None = None) -> None:
    """Add to a judged report that one of its checks could not reach its verdict, judged as the guard judges its
    own (the report fails unless the allow-list or the baseline accepts it)."""
    (finding,), passed = judge([not_checked_finding(reason)], policy, known)
    report.findings.append(finding)
    report.passed = bool(report.passed is not False and passed)


def parse_allow(entries: Sequence[object], source: str = "allow") -> tuple[AllowEntry, ...]:
    """Validate allow-list entries given as AllowEntry, (pattern, reason) pairs or {pattern, reason} dicts.

    Raises ValueError with a sentence naming the bad entry: a reason is mandatory.
    """
    out: list[AllowEntry] = []
    for entry in entries:
        if isinstance(entry, AllowEntry):
            out.append(entry)
            continue
        if isinstance(entry, dict):
            pattern, reason = entry.get("pattern"), entry.get("reason")
            kinds = tuple(entry.get("kinds", ()))
        elif isinstance(entry, (tuple, list)) and len(entry) == 2:
            (pattern, reason), kinds = entry, ()
        else:
            raise ValueError(
                f"{source}: each entry must be (pattern, reason) or {{'pattern': ..., 'reason': ...}}, got {entry!r}"
            )
        if not isinstance(pattern, str) or not pattern.strip():
            raise ValueError(f"{source}: entry {entry!r} has no file:line or glob pattern")
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError(f"{source}: entry {pattern!r} needs a reason (why this finding is acceptable)")
        out.append(AllowEntry(pattern.strip(), reason.strip(), kinds))
    return tuple(out)
