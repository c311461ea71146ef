"""The known-issues baseline: findings a project has accepted for now, each with a reason and a reference.

A committed JSON file (so a PR shows every change to it). A finding matching an active entry is `known`
and does not fail its test; a finding matching none fails. Strict: an active entry whose scope ran but
that matched nothing is stale, and fails the run so it gets removed.
"""

from __future__ import annotations

import fnmatch
import json
import os
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import date
from typing import Any

from .findings import STATUS_FAIL, STATUS_KNOWN, Finding, Report
from .policy import where_matches

SCHEMA = "pytest-nosync-baseline/1"
PLACEHOLDER_REASON = "accepted when the baseline was written: replace with why, and link the upstream issue"


class BaselineError(ValueError):
    """The baseline file is missing, malformed or has an entry without a reason; the message says which."""


@dataclass(frozen=True)
class Entry:
    """One accepted finding. target/check/test/kind are globs ("*" = any); where is file[:line] (globs)."""

    where: str
    reason: str
    kind: str = "*"
    target: str = "*"
    check: str = "*"
    test: str = "*"
    upstream: str = ""
    added: str = ""
    diffusers: str = ""  # a version specifier such as "<0.38"; empty: every version
    backend: str = "*"  # cuda, emulate: a finding only one backend sees

    @property
    def label(self) -> str:
        ref = f" ({self.upstream})" if self.upstream else ""
        return f"{self.kind} at {self.where} in {self.target}/{self.check}{ref}"

    def in_scope(self, test_id: str, target: str, check: str, backend: str = "") -> bool:
        return (
            fnmatch.fnmatchcase(target or "", self.target)
            and fnmatch.fnmatchcase(check or "", self.check)
            and fnmatch.fnmatchcase(test_id or "", self.test)
            and (not backend or fnmatch.fnmatchcase(backend, self.backend))
        )

    def matches(self, finding: Finding) -> bool:
        return fnmatch.fnmatchcase(finding.kind, self.kind) and where_matches(self.where, finding.where)

    def active(self, diffusers_version: str | None) -> bool:
        if not self.diffusers or diffusers_version is None:
            return True
        from packaging.specifiers import SpecifierSet
        from packaging.version import Version

        return Version(diffusers_version) in SpecifierSet(self.diffusers)


@dataclass
class Baseline:
    entries: list[Entry]
    path: str = ""

    @classmethod
    def load(cls, path: str) -> Baseline:
        try:
            with open(path, encoding="utf-8") as fh:
                raw = json.load(fh)
        except FileNotFoundError:
            raise BaselineError(f"baseline {path} does not exist (write one with --nosync-baseline-write)") from None
        except json.JSONDecodeError as exc:
            raise BaselineError(f"baseline {path} is not valid JSON: {exc}") from None
        if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
            raise BaselineError(f'baseline {path} has no \'"schema": "{SCHEMA}"\'')
        entries = []
        for i, item in enumerate(raw.get("entries", [])):
            if not isinstance(item, dict) or not item.get("where"):
                raise BaselineError(f"baseline {path}: entry {i} needs a 'where' (file:line or glob)")
            if not str(item.get("reason", "")).strip():
                raise BaselineError(f"baseline {path}: entry {i} ({item.get('where')}) needs a 'reason'")
            unknown = set(item) - set(Entry.__dataclass_fields__)
            if unknown:
                raise BaselineError(f"baseline {path}: entry {i} has unknown field(s) {sorted(unknown)}")
            entries.append(Entry(**item))
        return cls(entries, path)

    def active_entries(self, diffusers_version: str | None) -> list[tuple[int, Entry]]:
        return [(i, e) for i, e in enumerate(self.entries) if e.active(diffusers_version)]

    def matcher(self, test_id: str, target: str, check: str, diffusers_version: str | None, backend: str = ""):
        """A policy KnownMatcher for one test: the note of the first entry a finding matches."""
        scoped = [
            (i, e) for i, e in self.active_entries(diffusers_version) if e.in_scope(test_id, target, check, backend)
        ]

        def known(finding: Finding) -> str | None:
            for i, entry in scoped:
                if entry.matches(finding):
                    return f"baseline #{i}: {entry.reason}" + (f" ({entry.upstream})" if entry.upstream else "")
            return None

        return known

    def stale(self, reports: Iterable[Report], diffusers_version: str | None) -> list[tuple[int, Entry]]:
        """Active entries whose scope ran in `reports` but matched no finding."""
        reports = list(reports)
        matched: set[int] = set()
        for r in reports:
            for f in r.findings:
                if f.status == STATUS_KNOWN and f.note.startswith("baseline #"):
                    matched.add(int(f.note.split("#", 1)[1].split(":", 1)[0]))
        out = []
        for i, entry in self.active_entries(diffusers_version):
            ran = any(entry.in_scope(r.test_id, r.target, r.check, r.backend) for r in reports)
            if ran and i not in matched:
                out.append((i, entry))
        return out


def entries_from(reports: Iterable[Report], diffusers_version: str | None) -> list[Entry]:
    """Baseline entries for every failing or known finding of a run, one per (target, check, kind, where)."""
    seen: dict[tuple, Entry] = {}
    today = date.today().isoformat()
    for r in reports:
        for f in r.findings:
            if f.status not in (STATUS_FAIL, STATUS_KNOWN):
                continue
            # Without a target the test itself is the scope (a user's own guarded test).
            key = (r.target or r.test_id, r.check or "*", f.kind, f.where)
            if key in seen:
                continue
            seen[key] = Entry(
                where=_portable(f.where),
                reason=PLACEHOLDER_REASON,
                kind=f.kind,
                target=r.target or "*",
                check=r.check or "*",
                test="*" if r.target else r.test_id,
                added=today,
                diffusers=f"=={diffusers_version}" if diffusers_version and r.target else "",
            )
    return list(seen.values())


def _portable(where: str) -> str:
    """A where pattern that holds on another machine: the path from its import root (a sys.path entry)."""
    filename, _, line = where.rpartition(":")
    roots = sorted((os.path.abspath(p) for p in sys.path if p), key=len, reverse=True)
    for root in roots:
        if filename.startswith(root.rstrip(os.sep) + os.sep):
            return "*/" + os.path.relpath(filename, root) + ":" + line
    for marker in ("/site-packages/", "/dist-packages/"):  # a path from another machine's environment
        if marker in filename:
            return "*/" + filename.split(marker, 1)[1] + ":" + line
    return where


def write(path: str, entries: list[Entry]) -> None:
    doc: dict[str, Any] = {"schema": SCHEMA, "entries": [_compact(e) for e in entries]}
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2)
        fh.write("\n")


def _compact(entry: Entry) -> dict[str, Any]:
    defaults = Entry(where="", reason="")
    return {k: v for k, v in asdict(entry).items() if k in ("where", "reason") or v != getattr(defaults, k)}
