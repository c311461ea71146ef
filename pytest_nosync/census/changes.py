"""Which lines a branch changed, and which recorded code those lines touch.

`changed_lines` diffs the working tree (staged and unstaged edits, untracked files) against a git REF, by default
the merge base of HEAD with main (else master, else origin/HEAD): what a pull request would change. `touched` maps
those lines onto an `ExecutedCode` record.

A line counts for a recorded file when it lies inside a function that ran, or outside every function of the file.
Outside every function is module level or a class body: imports, constants, decorators, class attributes, run at
import and read by the functions that ran, so such a change can alter them without touching their lines. A change
inside a function that did not run counts for nothing, also in a module first imported inside the record, whose module
and class-body code ran there (their spans cover the whole file or class: they count as module level, not as
functions that ran).

Line numbers: `side="old"` gives REF's numbering (a record made at REF, say on main), `side="new"` the working
tree's (a record made on this branch). A record made at neither misplaces lines; its files' blob hashes tell.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from .executed_code import ExecutedCode

LineRanges = tuple[tuple[int, int], ...]  # inclusive (first, last), sorted, merged
WHOLE_FILE: LineRanges = ((1, sys.maxsize),)
MODULE_LEVEL = "<module>"
BASE_BRANCHES = ("main", "master", "origin/HEAD")
_BINARY = re.compile(r"Binary files (.+) and (.+) differ")  # a binary file's change, which has no hunks
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class ChangesError(Exception):
    """The change set cannot be known (not a git repository, an unknown ref); the message is one sentence."""


def changed_lines(repo: Path, ref: str | None = None, *, side: str = "old") -> dict[str, LineRanges]:
    """Lines changed from `ref` (default: `merge_base(repo)`) to the working tree, by absolute file path.

    Added, deleted, renamed, binary and untracked files count as wholly changed (a rename changes the module's
    import name); a pure insertion counts as the lines on either side of it, so a line added at the end of a
    function still touches that function.
    """
    if side not in ("old", "new"):
        raise ValueError(f"side must be 'old' or 'new', got {side!r}")
    top = _toplevel(repo)
    base = _commit(top, ref) if ref is not None else merge_base(top)
    patch = _git(top, "diff", "--no-color", "--no-ext-diff", "-U0", "-M", "--no-prefix", base, "--")
    changes: dict[str, list[tuple[int, int]]] = {}
    for path, ranges in _parse(patch, side):
        changes.setdefault(str(top / path), []).extend(ranges)
    for path in _git(top, "ls-files", "-z", "--others", "--exclude-standard").split("\0"):
        if path:
            changes[str(top / path)] = list(WHOLE_FILE)
    return {path: _merged(ranges) for path, ranges in changes.items()}


def resolve(repo: Path, ref: str | None = None) -> tuple[Path, str]:
    """(the repository's top directory, the commit of `ref`, by default the merge base with the main branch)."""
    top = _toplevel(repo)
    return top, (_commit(top, ref) if ref else merge_base(top))


def blobs_at(top: Path, commit: str, paths: list[str]) -> dict[str, str]:
    """The git blob hash of each of `paths` (absolute, inside `top`) at `commit`; a path absent there is left out."""
    inside = {str(Path(p).relative_to(top).as_posix()): p for p in paths if Path(p).is_relative_to(top)}
    if not inside:
        return {}
    listing = _git(top, "ls-tree", "-z", "--full-tree", commit, "--", *inside)
    out: dict[str, str] = {}
    for entry in listing.split("\0"):
        meta, _, path = entry.partition("\t")
        if path in inside:
            out[inside[path]] = meta.split()[2]
    return out


def merge_base(repo: Path) -> str:
    """The commit HEAD forked from: its merge base with main, else master, else origin/HEAD."""
    top = _toplevel(repo)
    _commit(top, "HEAD")
    for branch in BASE_BRANCHES:
        if _exists(top, branch):
            return _git(top, "merge-base", "HEAD", branch).strip()
    raise ChangesError(f"{top} has no main, master or origin/HEAD branch to take a merge base with; name a REF")


def touched(record: ExecutedCode, changes: Mapping[str, LineRanges]) -> list[tuple[str, str]]:
    """(file, qualified name) of each recorded function a changed line falls in, and (file, "<module>") for a
    recorded file changed outside all its functions (a file whose module-level code the recorded code reads, none of
    its functions run, is recorded too: `ExecutedCode.imported`); sorted, each once."""
    hits: set[tuple[str, str]] = set()
    for file in record.files():
        ranges = changes.get(file)
        if not ranges:
            continue
        spans = record.functions_ran(file)  # not a module's or class body's code: that is module level, below
        for first, last in ranges:
            hits.update((file, span.qualname) for span in spans if first <= span.last_line and span.first_line <= last)
        defs = record.defs(file)  # None: the file changed since it ran, its functions unknown; count it all
        if defs is None or any(not _covered(r, defs) for r in ranges):
            hits.add((file, MODULE_LEVEL))
    return sorted(hits)


def _parse(patch: str, side: str) -> list[tuple[str, list[tuple[int, int]]]]:
    """(path, ranges) per file of a `git diff -U0 -M --no-prefix` patch, paths on `side`."""
    files: list[tuple[str, list[tuple[int, int]]]] = []
    for block in re.split(r"^diff --git .*$", patch, flags=re.MULTILINE)[1:]:
        old = new = ""
        whole = False
        ranges: list[tuple[int, int]] = []
        for line in block.splitlines():
            if line.startswith(("rename from ", "copy from ")):
                old, whole = _unquote(line.split(" from ", 1)[1]), True
            elif line.startswith(("rename to ", "copy to ")):
                new, whole = _unquote(line.split(" to ", 1)[1]), True
            elif line.startswith(("new file mode", "deleted file mode")):
                whole = True
            elif binary := _BINARY.fullmatch(line):  # no ---/+++ lines: the paths are on this one
                old, new, whole = old or _unquote(binary[1]), new or _unquote(binary[2]), True
            elif line.startswith(("--- ", "+++ ")):  # git ends a name with a space in it by a tab
                name = _unquote(line[4:].removesuffix("\t"))
                old, new = (old or name, new) if line[0] == "-" else (old, new or name)
            elif match := _HUNK.match(line):
                start, count = (match[1], match[2]) if side == "old" else (match[3], match[4])
                ranges.append(_hunk_range(int(start), 1 if count is None else int(count)))
        path = _side_path(old, new, side)
        if path and (whole or ranges):
            files.append((path, list(WHOLE_FILE) if whole else ranges))
    return files


def _side_path(old: str, new: str, side: str) -> str:
    """The file's path on `side`; a file that does not exist there (added, deleted) is named by the other side."""
    old, new = ("" if p == "/dev/null" else p for p in (old, new))
    return (old or new) if side == "old" else (new or old)


def _hunk_range(start: int, count: int) -> tuple[int, int]:
    """Lines of one side of a hunk; none (count 0) means between `start` and `start + 1`: both count."""
    if count == 0:
        return (max(start, 1), start + 1)
    return (start, start + count - 1)


def _merged(ranges: list[tuple[int, int]]) -> LineRanges:
    out: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return tuple(out)


def _covered(lines: tuple[int, int], defs: tuple[tuple[int, int], ...]) -> bool:
    """Whether every line of `lines` is inside some function of `defs`."""
    position = lines[0]
    for first, last in _merged(list(defs)):
        if first > position:
            return False
        position = max(position, last + 1)
        if position > lines[1]:
            return True
    return False


def _unquote(path: str) -> str:
    """git's C-quoted path ("a\\tb.py", octal escapes for non-ASCII) as text."""
    if not (path.startswith('"') and path.endswith('"')):
        return path
    return path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape").encode("latin-1").decode("utf-8")


def _toplevel(repo: Path) -> Path:
    if not Path(repo).is_dir():
        raise ChangesError(f"{repo} is not a directory, so it has no git changes")
    result = _run(Path(repo), "rev-parse", "--show-toplevel")
    if result.returncode != 0:
        raise ChangesError(f"{repo} is not inside a git repository ({_first_line(result.stderr)})")
    return Path(result.stdout.strip())


def _commit(top: Path, ref: str) -> str:
    result = _run(top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if result.returncode != 0:
        if ref == "HEAD":
            raise ChangesError(f"{top} has no commit yet, so there is no branch to compare")
        raise ChangesError(f"{ref!r} is not a commit, branch or tag known to the git repository at {top}")
    return result.stdout.strip()


def _exists(top: Path, ref: str) -> bool:
    return _run(top, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode == 0


def _git(top: Path, *args: str) -> str:
    result = _run(top, *args)
    if result.returncode != 0:
        raise ChangesError(f"git {args[0]} failed in {top}: {_first_line(result.stderr)}")
    return result.stdout


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", "-c", "core.quotepath=on", *args], cwd=cwd, capture_output=True, text=True, encoding="utf-8"
        )
    except FileNotFoundError as error:
        raise ChangesError("git is not installed, so changes cannot be read") from error


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "no message"
