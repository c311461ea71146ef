"""--nosync-changed[=REF]: only the tester classes whose checked code a change touches (plugin.census).

Each tester's pipeline records the code it ran (executed_code: its build and its calibrating call, the code every
check of it runs) in pytest's cache, in every checking run. A later run with --nosync-changed compares the lines changed
from REF (default: the merge base with main) to the working tree (changes.changed_lines) with that record: a tester
runs when a changed line is in a function its pipeline ran, or at module level of a file it ran or whose module-level
data the code it ran imports (a module of constants read at import: imported_code; changes.touched).

A record's lines are those of the files when it was made. Each recorded file's blob hash says which numbering to read
the change in: a record made on this working tree reads the changed lines as they are now, one made at REF (say on
main) as they were there; a file that matches neither (changed since the record, and not at REF either) makes the
record stale, and the tester runs. A tester with no record runs, and is recorded.

Why not pytest-testmon: it selects by what changed since its own database's last run, not since a git REF (a second
run of the same branch selects nothing), and it records only files under the run's root directory, which leaves
out a diffusers installed in site-packages or put on PYTHONPATH (docs/validation.md has the measurements).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .changes import ChangesError, LineRanges, blobs_at, changed_lines, resolve, touched
from .executed_code import ExecutedCode, RecorderBusy, blob_sha, record_executed

CACHE_PREFIX = "nosync/executed/"


def cache_key(class_id: str) -> str:
    return CACHE_PREFIX + class_id


@contextlib.contextmanager
def recorded(cache: Any, class_id: str, test_file: Path) -> Iterator[None]:
    """Record the code the tester's pipeline runs (its build and its calibrating call: what its checks run) in
    `cache` (pytest's; None: nothing is recorded) for a later --nosync-changed, also when it raised (a tester that
    cannot be driven or checked here is so because of the code it ran: until a change touches that code, the next run
    would say the same). A recorder that cannot install itself records nothing."""
    if cache is None:
        yield
        return
    roots = roots_of(test_file)
    record = None
    try:
        with record_executed(roots=roots) as record:
            yield
    except RecorderBusy:
        if record is not None:  # not the recorder's refusal at its start: the block's own
            raise
        yield  # refused before the block ran: it runs unrecorded
    finally:
        if record is not None:
            cache.set(cache_key(class_id), record.to_json(roots))


def roots_of(test_file: Path) -> list[Path]:
    """Where a tester's recorded code may live: the diffusers package under test, and the tests tree its module is
    in (its outermost package directory, or its own directory)."""
    import diffusers  # the diffusers under test, imported by the census run that asks

    tests = Path(test_file).resolve().parent
    while (tests / "__init__.py").exists() and (tests.parent / "__init__.py").exists():
        tests = tests.parent
    return [Path(diffusers.__file__).resolve().parent, tests]


def repo_of(test_file: Path) -> Path:
    """The repository of the tester classes: a contributor's diffusers checkout, whose src/ is the diffusers under
    test (a diffusers installed elsewhere is not the change's)."""
    return Path(test_file).resolve().parent


@dataclass
class Selection:
    """What --nosync-changed decided, for the run's lines."""

    ref: str
    commit: str
    selected: list[str] = field(default_factory=list)  # class ids a change touches: (class, place) lines
    unrecorded: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    deselected: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)  # class id → the first touched place

    def lines(self) -> list[str]:
        runs = len(self.selected) + len(self.unrecorded) + len(self.stale)
        total = runs + len(self.deselected)
        head = (
            f"nosync: --nosync-changed since {self.ref or 'the merge base'} ({self.commit[:10]}): {runs} of {total} "
            f"pipeline tester classes run"
        )
        parts = [f"{len(self.selected)} touched by the change"]
        if self.unrecorded:
            parts.append(f"{len(self.unrecorded)} not recorded yet (run, and recorded)")
        if self.stale:
            parts.append(f"{len(self.stale)} whose record is older than REF and the working tree")
        return [f"{head}: {', '.join(parts)}"] + [f"  {cls}: {self.reasons[cls]}" for cls in self.selected[:20]]


def select(class_ids: list[str], ref: str, repo: Path, roots: list[Path], cache: Any) -> Selection:
    """Decide for each tester class (by its node id) whether it runs; see the module doc. Raises ChangesError."""
    top, commit = resolve(repo, ref or None)
    old, new = changed_lines(top, commit, side="old"), changed_lines(top, commit, side="new")
    selection = Selection(ref=ref, commit=commit)
    for class_id in class_ids:
        raw = cache.get(cache_key(class_id), None)
        if raw is None:
            selection.unrecorded.append(class_id)
            continue
        try:
            record = ExecutedCode.from_json(raw, roots)
        except (ValueError, KeyError, TypeError):
            selection.unrecorded.append(class_id)
            continue
        changes = _as_recorded(record, top, commit, old, new)
        if changes is None:
            selection.stale.append(class_id)
            continue
        hits = touched(record, changes)
        if hits:
            selection.selected.append(class_id)
            file, name = hits[0]
            selection.reasons[class_id] = f"{_short(file, top)} ({name})" + (
                f" and {len(hits) - 1} more" if hits[1:] else ""
            )
        else:
            selection.deselected.append(class_id)
    return selection


def _as_recorded(
    record: ExecutedCode, top: Path, commit: str, old: dict[str, LineRanges], new: dict[str, LineRanges]
) -> dict[str, LineRanges] | None:
    """The changed lines of each recorded file in the numbering the record has (None: a file matches neither)."""
    files = sorted(record.files())
    at_ref = blobs_at(top, commit, files)
    out: dict[str, LineRanges] = {}
    for file in files:
        recorded = record.blob(file)
        if recorded is not None and recorded == blob_sha(file):
            out[file] = new.get(file, ())
        elif recorded is not None and recorded == at_ref.get(file):
            out[file] = old.get(file, ())
        elif file in new or file in old:
            return None
    return out


def _short(file: str, top: Path) -> str:
    path = Path(file)
    return str(path.relative_to(top)) if path.is_relative_to(top) else file


__all__ = ["ChangesError", "Selection", "cache_key", "recorded", "repo_of", "roots_of", "select"]
