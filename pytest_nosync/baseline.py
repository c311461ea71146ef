"""The known-issues baseline: findings a project has accepted for now, each with a reason and an upstream reference.

A committed JSON file (so a PR shows every change to it). A finding matching an entry in scope is `known` and does
not fail its test; a finding matching none fails. An entry names its finding the way a person would, so that it
follows the code across versions: the file (its path inside its package), the enclosing function, the source text
of the line (normalized) and which of the identical lines of that function it is, and the kind; the line number
is only a hint. Entries of kind `error` name an exception a case raises (type, and a pattern on its message); entries
of kind `not_checked` a check that could not reach its verdict (a pattern on the reason), which a maintainer accepts
until what stops the check is fixed.

Strict: at the end of a run every entry whose scope ran but that matched nothing fails the run, saying which it is:
`fixed` (its code is still there but no longer does what the entry says: remove the entry), or `stale` (its code is
gone: moved to another function, rewritten or deleted: re-record or remove it). An entry that matched at another
line than its hint is `moved` (not a failure: `--nosync-baseline-write` rewrites the hints, keeping the reasons).

Schema 1 files (entries with a `where` file:line pattern) still load and match by line; `python -m pytest_nosync
baseline migrate FILE` rewrites them in this form from the installed package.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import date
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from . import source_identity
from .findings import Finding, Kind, KnownMatch, Location, Report, Status
from .policy import where_matches

SCHEMA = "pytest-nosync-baseline/2"
SCHEMAS = ("pytest-nosync-baseline/1", SCHEMA)
PLACEHOLDER_REASON = "accepted when the baseline was written: replace with why, and link the upstream issue"


class BaselineError(ValueError):
    """The baseline file is missing, malformed or has an entry without a reason; the message says which."""


@dataclass(frozen=True)
class Entry:
    """One accepted finding. target/check/test/backend/kind are globs ("*": any). The code identity (file,
    function, code, occurrence) says which finding; `line` is where it stood when recorded. `where` is the schema-1
    file[:line] glob. `diffusers` is a version range (">=0.41", ">=0.38,<0.43"); `until` names what will fix it."""

    reason: str
    kind: str = "*"
    file: str = ""
    function: str = ""
    code: str = ""
    occurrence: int | None = None
    line: int = 0
    where: str = ""
    exception: str = ""
    message: str = ""
    target: str = "*"
    check: str = "*"
    test: str = "*"
    backend: str = "*"
    scenario: str = "*"
    diffusers: str = ""
    until: str = ""
    upstream: str = ""
    added: str = ""

    @property
    def place(self) -> str:
        if self.kind == Kind.ERROR:
            return f"{self.exception or 'an exception'} matching {self.message!r}"
        if self.kind == Kind.NOT_CHECKED:
            return f"a reason matching {self.message!r}"
        if self.file:
            return f"{self.file}:{self.line} in {self.function}: {self.code}"
        return self.where

    @property
    def label(self) -> str:
        ref = f" ({self.upstream})" if self.upstream else ""
        scenario = f" under {self.scenario}" if self.scenario != "*" else ""
        return f"{self.kind} at {self.place} in {self.target}/{self.check}{scenario}{ref}"

    def in_scope(self, test_id: str, target: str, check: str, backend: str = "", scenario: str = "plain") -> bool:
        return (
            fnmatch.fnmatchcase(target or "", self.target)
            and fnmatch.fnmatchcase(check or "", self.check)
            and fnmatch.fnmatchcase(test_id or "", self.test)
            and (not backend or fnmatch.fnmatchcase(backend, self.backend))
            and fnmatch.fnmatchcase(scenario or "plain", self.scenario)
        )

    def applies_to(self, diffusers_version: str | None) -> bool:
        """Whether the entry's version range admits the installed diffusers (development versions included)."""
        if not self.diffusers or diffusers_version is None:
            return True
        return SpecifierSet(self.diffusers).contains(Version(diffusers_version), prereleases=True)

    def matches(self, finding: Finding) -> bool:
        if not fnmatch.fnmatchcase(finding.kind, self.kind):
            return False
        if self.kind == Kind.ERROR:
            data = finding.data
            return _exception_matches(self.exception, str(data.get("exception", ""))) and bool(
                re.search(self.message, str(data.get("message", "")))
            )
        if self.kind == Kind.NOT_CHECKED:
            return bool(re.search(self.message, finding.detail))
        if finding.kind == Kind.NOT_CHECKED:  # a reason, not a place: only an entry of its kind names it
            return False
        if self.file:
            found = _identity(finding)
            return (
                found is not None
                and (found.file == self.file or found.file.endswith("/" + self.file))
                and fnmatch.fnmatchcase(found.function, self.function or "*")
                and found.code == source_identity.normalize(self.code)
                and (self.occurrence is None or found.occurrence == self.occurrence)
            )
        return where_matches(self.where, finding.where)


def _exception_matches(wanted: str, raised: str) -> bool:
    return not wanted or raised == wanted or raised.rsplit(".", 1)[-1] == wanted


def _identity(finding: Finding) -> source_identity.Identity | None:
    return source_identity.identify(finding.filename, finding.lineno) if finding.lineno else None


@dataclass(frozen=True)
class Review:
    """What became of an entry in a run: stale, fixed or moved (see the module doc)."""

    index: int
    entry: Entry
    status: str
    detail: str

    @property
    def fails(self) -> bool:
        return self.status in ("stale", "fixed")


@dataclass(frozen=True)
class ScopedMatcher:
    """The baseline entries in one test's scope, as its KnownMatcher. Data, not a closure: it travels with the
    test's GuardOptions to a helper process (suite.graph_helpers)."""

    scoped: tuple[tuple[int, Entry], ...]

    def __call__(self, finding: Finding) -> KnownMatch | None:
        for i, entry in self.scoped:
            if entry.matches(finding):
                return KnownMatch(i, entry.reason, entry.upstream)
        return None


@dataclass
class Baseline:
    entries: list[Entry]  # as loaded: not changed afterwards (the lookups below are computed once per version)
    path: str = ""
    shipped: bool = False  # the package's own, picked up for the built-in suite
    _by_version: dict[str | None, _Applying] = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def load(cls, path: str, shipped: bool = False) -> Baseline:
        try:
            with open(path, encoding="utf-8") as fh:
                raw = json.load(fh)
        except FileNotFoundError:
            raise BaselineError(f"baseline {path} does not exist (write one with --nosync-baseline-write)") from None
        except IsADirectoryError:
            raise BaselineError(f"baseline {path} is a directory, not a baseline file") from None
        except OSError as exc:  # no permission, a broken device: the system's reason
            raise BaselineError(f"baseline {path} cannot be read: {exc.strerror or exc}") from None
        except ValueError as exc:  # JSONDecodeError, or bytes that are not UTF-8
            raise BaselineError(f"baseline {path} is not valid JSON: {exc}") from None
        if not isinstance(raw, dict) or raw.get("schema") not in SCHEMAS:
            raise BaselineError(f'baseline {path} has no \'"schema": "{SCHEMA}"\'')
        entries = raw.get("entries", [])
        if not isinstance(entries, list):
            raise BaselineError(f"baseline {path}: 'entries' must be a list of entries")
        return cls([_entry(path, i, item) for i, item in enumerate(entries)], path, shipped)

    @property
    def legacy(self) -> int:
        """Entries that still match by line number (schema 1): migrate them."""
        return sum(1 for e in self.entries if e.where and not e.file)

    def applying(self, diffusers_version: str | None) -> list[tuple[int, Entry]]:
        return self._applying(diffusers_version).entries

    def _applying(self, diffusers_version: str | None) -> _Applying:
        if diffusers_version not in self._by_version:
            self._by_version[diffusers_version] = _Applying(
                [(i, e) for i, e in enumerate(self.entries) if e.applies_to(diffusers_version)]
            )
        return self._by_version[diffusers_version]

    def summary(self, diffusers_version: str | None) -> str:
        """One line for the run's header: which baseline judges the run, and how much of it applies."""
        applying = len(self.applying(diffusers_version))
        which = f"{self.path} (shipped with pytest-nosync)" if self.shipped else self.path
        line = (
            f"nosync: baseline {which}: {applying} of {len(self.entries)} entries apply to diffusers "
            f"{diffusers_version}"
        )
        if self.legacy:
            line += f"; {self.legacy} match by line number only (python -m pytest_nosync baseline migrate)"
        return line

    def matcher(self, test_id: str, target: str, check: str, diffusers_version: str | None, backend: str = "",
                scenario: str = "plain") -> ScopedMatcher:  # fmt: skip
        """A policy KnownMatcher for one test: the note of the first entry a finding matches."""
        scoped = [
            (i, e)
            for i, e in self._applying(diffusers_version).for_target(target)
            if e.in_scope(test_id, target, check, backend, scenario)
        ]
        return ScopedMatcher(tuple(scoped))

    def review(self, reports: Iterable[Report], diffusers_version: str | None) -> list[Review]:
        """Entries whose scope ran: the ones that matched nothing (stale or fixed), and the ones that moved."""
        reports = list(reports)
        matched: dict[int, list[Finding]] = {}
        for r in reports:
            for f in r.findings:
                index = known_entry(f)
                if index is not None:
                    matched.setdefault(index, []).append(f)
        out = []
        by_target = _by_target(reports)
        for i, entry in self.applying(diffusers_version):
            if not _ran(entry, by_target):
                continue
            if i in matched:
                lines = sorted({f.lineno for f in matched[i]} - {0})
                if entry.file and entry.line and lines and entry.line not in lines:
                    out.append(Review(i, entry, "moved", f"now at line {lines[0]} (recorded at {entry.line})"))
            else:
                out.append(_unmatched(i, entry))
        return out


class _Applying:
    """The entries that apply to one diffusers version, those of a literal target found by it: a census baseline has
    thousands of entries, each for one tester class, and its run thousands of tests, so scanning every entry per test
    (and every test per entry at the end) took minutes."""

    def __init__(self, entries: list[tuple[int, Entry]]) -> None:
        self.entries = entries
        self._literal: dict[str, list[tuple[int, Entry]]] = {}
        self._patterns: list[tuple[int, Entry]] = []
        for pair in entries:
            target = pair[1].target
            if _is_literal(target):
                self._literal.setdefault(target, []).append(pair)
            else:
                self._patterns.append(pair)

    def for_target(self, target: str) -> list[tuple[int, Entry]]:
        """The entries whose target pattern may match `target`, in the baseline's order (the first match wins)."""
        literal = self._literal.get(target or "", [])
        return sorted(literal + self._patterns, key=lambda pair: pair[0]) if self._patterns else literal


def _is_literal(pattern: str) -> bool:
    return not any(c in pattern for c in "*?[")


def _by_target(reports: list[Report]) -> dict[str, list[Report]]:
    out: dict[str, list[Report]] = {}
    for r in reports:
        out.setdefault(r.target or "", []).append(r)
    return out


def _ran(entry: Entry, by_target: dict[str, list[Report]]) -> bool:
    """Whether some report is in the entry's scope (looked up by target where the entry names one)."""
    if _is_literal(entry.target):
        candidates: Iterable[Report] = by_target.get(entry.target, [])
    else:
        candidates = (r for reports in by_target.values() for r in reports)
    return any(entry.in_scope(r.test_id, r.target, r.check, r.backend, r.scenario) for r in candidates)


def _unmatched(index: int, entry: Entry) -> Review:
    if entry.kind == Kind.ERROR:
        return Review(index, entry, "fixed", "the case no longer raises it: remove the entry")
    if entry.kind == Kind.NOT_CHECKED:
        return Review(index, entry, "fixed", "the check reaches its verdict now: remove the entry")
    if not entry.file:  # schema 1: only the line is known
        return Review(index, entry, "stale", "no longer occurs at that line: migrate the baseline, or remove it")
    filename = source_identity.locate_file(entry.file)
    line = filename and source_identity.find(filename, entry.function, source_identity.normalize(entry.code),
                                             entry.occurrence)  # fmt: skip
    if line:
        return Review(index, entry, "fixed", f"its code is still at line {line} but no longer reported: remove it")
    return Review(
        index,
        entry,
        "stale",
        "its code is gone from the function (moved, rewritten or deleted): re-record it with "
        "--nosync-baseline-write, or remove it",
    )


def known_entry(finding: Finding) -> int | None:
    """The index of the baseline entry a known finding matched."""
    return finding.known.entry if finding.status == Status.KNOWN and finding.known is not None else None


def _entry(path: str, i: int, item: Any) -> Entry:
    if not isinstance(item, dict):
        raise BaselineError(f"baseline {path}: entry {i} is not an object")
    label = item.get("where") or item.get("file") or item.get("exception") or f"entry {i}"
    unknown = set(item) - {f.name for f in fields(Entry)}
    if unknown:
        raise BaselineError(f"baseline {path}: entry {i} has unknown field(s) {sorted(unknown)}")
    if not str(item.get("reason", "")).strip():
        raise BaselineError(f"baseline {path}: entry {i} ({label}) needs a 'reason'")
    if item.get("kind") in (Kind.ERROR, Kind.NOT_CHECKED):
        if not item.get("message"):
            raise BaselineError(f"baseline {path}: entry {i} (kind {item['kind']}) needs a 'message' pattern")
        try:
            re.compile(item["message"])
        except re.error as exc:
            raise BaselineError(f"baseline {path}: entry {i}: 'message' is not a regular expression: {exc}") from None
    elif not (item.get("where") or (item.get("file") and item.get("code"))):
        raise BaselineError(f"baseline {path}: entry {i} needs a 'file' and its 'code' (or a schema-1 'where')")
    entry = Entry(**item)
    if entry.diffusers:
        try:
            SpecifierSet(entry.diffusers)
        except InvalidSpecifier:
            raise BaselineError(
                f"baseline {path}: entry {i} ({label}): 'diffusers' must be a version range such as '>=0.41', "
                f"got {entry.diffusers!r}"
            ) from None
    return entry


# ---- writing ---------------------------------------------------------------------------------------------------
def default_range(diffusers_version: str | None) -> str:
    """The range a new entry gets: from this release on (a development version counts as its own release)."""
    if not diffusers_version:
        return ""
    v = Version(diffusers_version)
    return f">={v}" if v.is_prerelease or v.is_devrelease else f">={v.major}.{v.minor}"


def entries_from(
    reports: Iterable[Report], diffusers_version: str | None, previous: Baseline | None = None
) -> list[Entry]:
    """A baseline of a run: every failing or known finding, one entry per problem. A known finding keeps its
    entry's reason, references and range (its line hint updated); entries of `previous` whose scope did not run
    (other targets, other diffusers versions) are kept as they are; those that ran and matched nothing are dropped."""
    reports = list(reports)
    today = date.today().isoformat()
    written: dict[tuple, Entry] = {}
    for r in reports:
        for f in r.findings:
            if f.status not in (Status.FAIL, Status.KNOWN):
                continue
            index = known_entry(f)
            earlier = previous.entries[index] if previous is not None and index is not None else None
            entry = _recorded(f, r, diffusers_version, today, earlier)
            written.setdefault(_key(entry), entry)
    # a finding also seen without a scenario is about the code every scenario runs: its entry holds for them all
    everywhere = {_key(replace(e, scenario="*", test="*")) for e in written.values() if e.scenario == "*"}
    written = {k: e for k, e in written.items() if e.scenario == "*" or _key(replace(e, scenario="*", test="*"))
               not in everywhere}  # fmt: skip
    kept = []
    if previous is not None:
        by_target = _by_target(reports)
        ran = {i for i, e in previous.applying(diffusers_version) if _ran(e, by_target)}
        kept = [e for i, e in enumerate(previous.entries) if i not in ran]
    return kept + list(written.values())


def merged_writes(writes: Iterable[tuple[list[Entry], list[Report]]]) -> list[Entry]:
    """One baseline from the writes of a run in shards (each shard's entries and its reports), the entries an unsharded
    run writes: each shard wrote the entries of its findings and kept the earlier baseline's entries whose scope it did
    not run; an earlier entry one shard kept but another ran and dropped (it matched nothing there) is dropped."""
    writes = list(writes)
    shards = [({_key(e) for e in entries}, _by_target(reports)) for entries, reports in writes]
    merged: dict[tuple, Entry] = {}
    for entries, _ in writes:
        for entry in entries:
            dropped = any(_ran(entry, by_target) and _key(entry) not in kept for kept, by_target in shards)
            if not dropped:
                merged.setdefault(_key(entry), entry)
    return list(merged.values())


def recorded(reports: Iterable[Report]) -> int:
    """The findings a written baseline accepts: every failing or known one of the run."""
    return sum(1 for r in reports for f in r.findings if f.status in (Status.FAIL, Status.KNOWN))


def _recorded(finding: Finding, report: Report, version: str | None, today: str, earlier: Entry | None) -> Entry:
    scope = {
        "target": report.target or "*",
        "check": report.check or "*",
        "test": "*" if report.target else report.test_id,  # without a target, the test itself is the scope
        "scenario": report.scenario if report.scenario not in ("", "plain") else "*",
    }
    base = earlier or Entry(reason=PLACEHOLDER_REASON, added=today, diffusers=default_range(version), **scope)
    if finding.kind == Kind.ERROR:
        message = str(finding.data.get("message", "")).splitlines()[0][:200] if finding.data.get("message") else ""
        return replace(base, kind=Kind.ERROR, exception=str(finding.data.get("exception", "")),
                       message=earlier.message if earlier else _pattern(message), where="")  # fmt: skip
    if finding.kind == Kind.NOT_CHECKED:
        return replace(base, kind=Kind.NOT_CHECKED, message=earlier.message if earlier else _pattern(finding.detail),
                       where="")  # fmt: skip
    found = _identity(finding)
    if found is None:  # a place without readable source (another machine's, a budget's): by portable file:line
        where = f"*/{source_identity.package_path(finding.filename)}:{finding.lineno}" if finding.lineno else ""
        return replace(base, kind=finding.kind, where=earlier.where if earlier else where or str(finding.where))
    return replace(
        base,
        kind=finding.kind,
        file=found.file,
        function=found.function,
        code=found.code,
        occurrence=found.occurrence,
        line=found.line,
        where="",
    )


def _pattern(text: str) -> str:
    """A regular expression matching `text` as it is, readable in the file (re.escape also escapes spaces)."""
    return re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", text)


def _key(entry: Entry) -> tuple:
    return (entry.target, entry.check, entry.test, entry.scenario, entry.kind, entry.file, entry.function, entry.code,
            entry.occurrence, entry.where, entry.exception, entry.message)  # fmt: skip


def write(path: str, entries: list[Entry], written_with: dict[str, Any] | None = None) -> None:
    """The baseline file; `written_with`: what the writing run ran (diffusers, backend, dtype), for its reader."""
    doc: dict[str, Any] = {"schema": SCHEMA, **({"written_with": written_with} if written_with else {}),
                           "entries": [_compact(e) for e in entries]}  # fmt: skip
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2)
        fh.write("\n")


_ORDER = ("kind", "file", "function", "code", "occurrence", "line", "where", "exception", "message", "target", "check",
          "test", "backend", "scenario", "diffusers", "until", "reason", "upstream", "added")  # fmt: skip


def _compact(entry: Entry) -> dict[str, Any]:
    defaults = Entry(reason="")
    values = asdict(entry)
    kept = {k: v for k, v in values.items() if k == "reason" or v != getattr(defaults, k)}
    return {k: kept[k] for k in _ORDER if k in kept}


# ---- migrating schema 1 ----------------------------------------------------------------------------------------
def migrate(baseline: Baseline) -> tuple[list[Entry], list[str]]:
    """Schema-1 entries rewritten by code identity, read from the installed package at their recorded line (run it
    with the version they were recorded against). Returns the entries and one line per entry saying what it became."""
    out, said = [], []
    for i, entry in enumerate(baseline.entries):
        if entry.file or not entry.where or entry.kind == Kind.ERROR:
            out.append(entry)
            continue
        recorded = Location.parse(entry.where)
        inside = recorded.file.lstrip("*/")
        found = source_identity.identify_place(Location(inside, recorded.line))
        if found is None or not found.code:
            said.append(f"#{i} {entry.where}: kept by line (the installed file has no such line)")
            out.append(entry)
            continue
        out.append(replace(entry, where="", file=inside, function=found.function, code=found.code,
                           occurrence=found.occurrence, line=found.line))  # fmt: skip
        said.append(f"#{i} {entry.where} → {found.function}: {found.code}")
    return out, said
