"""What a person would call "the same line" across versions of a file: its path inside its package, the function
it is in, its source text (normalized), and which of the identical lines of that function it is.

A line number changes when a comment is added at the top of the file; none of these do. Baseline entries
(pytest_nosync.baseline) name findings this way, with the line number kept as a hint.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import io
import os
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

from .findings import Location


@dataclass(frozen=True)
class Identity:
    file: str  # the path inside its package (from its import root), e.g. diffusers/schedulers/scheduling_x.py
    function: str  # the qualified name of the innermost enclosing function ("<module>" outside any)
    code: str  # the line's source, normalized
    occurrence: int  # among the lines of that function with the same code, in source order
    line: int


def normalize(line: str) -> str:
    """The source text of a line without its comment, its indentation or runs of spaces."""
    text = line.strip()
    if "#" not in text:  # no comment possible: tokenizing (the costly part of indexing a file) is not needed
        return " ".join(text.split())
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        tokens = []
    if tokens:
        text = text[: tokens[0].start[1]]
    return " ".join(text.split())


def package_path(filename: str) -> str:
    """`filename` relative to the import root it is found under (the longest sys.path entry containing it)."""
    path = os.path.abspath(filename)
    roots = sorted((os.path.abspath(p) for p in sys.path if p), key=len, reverse=True)
    for root in roots:
        if path.startswith(root.rstrip(os.sep) + os.sep):
            return os.path.relpath(path, root).replace(os.sep, "/")
    for marker in ("/site-packages/", "/dist-packages/"):  # a path from another machine's environment
        if marker in path.replace(os.sep, "/"):
            return path.replace(os.sep, "/").split(marker, 1)[1]
    return path.replace(os.sep, "/")


def short_place(where: Location) -> str:
    """A place inside its package (diffusers/schedulers/...), also for paths of another machine's checkout."""
    file = where.file.replace("\\", "/")
    if file.startswith("<"):  # code without a file (`<eval_with_key>.3`: an FX graph's generated forward)
        return str(where)
    at = file.rfind("/diffusers/")
    inside = file[at + 1 :] if at >= 0 else package_path(where.file)
    return str(Location(inside, where.line))


def locate_file(inside: str) -> str | None:
    """The file of this environment at `inside` (a path inside its package), or None."""
    for root in sys.path:
        candidate = os.path.join(root or ".", *inside.split("/"))
        if os.path.isfile(candidate):
            return candidate
    return None


@dataclass(frozen=True)
class _Index:
    raw: tuple[str, ...]  # the file's lines, 1-based through raw[n - 1]
    functions: tuple[tuple[int, int, str], ...]  # (first line, last line, qualified name), outer before inner

    def code(self, line: int) -> str:
        """Line `line` normalized; only the lines a lookup reads are (most of a file never is)."""
        return _normalized(self.raw[line - 1])


@functools.lru_cache(maxsize=65536)
def _normalized(line: str) -> str:
    return normalize(line)


@functools.lru_cache(maxsize=128)
def _index(filename: str, mtime: float) -> _Index:
    source = Path(filename).read_text(encoding="utf-8")  # keyed by mtime: a file changed on disk is read again
    functions: list[tuple[int, int, str]] = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        # Definitions sit only in statement bodies: expressions are not walked (most of a file's nodes).
        for child in body:
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    functions.append((child.lineno, child.end_lineno or child.lineno, name))
                visit(child.body, name + ".")
                continue
            for field in ("body", "orelse", "finalbody"):  # if/for/while/with/try bodies
                visit(getattr(child, field, None) or [], prefix)
            for clause in (*(getattr(child, "handlers", None) or ()), *(getattr(child, "cases", None) or ())):
                visit(clause.body, prefix)  # except clauses, match cases

    with contextlib.suppress(SyntaxError):
        visit(ast.parse(source).body, "")
    return _Index(tuple(source.splitlines()), tuple(functions))


def _load(filename: str) -> _Index | None:
    try:
        return _index(filename, os.path.getmtime(filename))
    except (OSError, UnicodeDecodeError):
        return None


def _function_at(index: _Index, line: int) -> tuple[str, int, int]:
    """(qualified name, first line, last line) of the innermost function enclosing `line`."""
    best = ("<module>", 1, len(index.raw))
    for first, last, name in index.functions:
        if first <= line <= last and (best[0] == "<module>" or first >= best[1]):
            best = (name, first, last)
    return best


def identify_place(place: Location) -> Identity | None:
    """The identity of `place` (its file inside its package, or absolute) in this environment's files, or None when
    it cannot be read there."""
    filename = place.file if os.path.isabs(place.file) else locate_file(place.file)
    return identify(filename, place.line) if filename and place.line else None


def identify(filename: str, line: int) -> Identity | None:
    """The identity of `filename:line`, or None when the file cannot be read there."""
    index = _load(filename)
    if index is None or not 1 <= line <= len(index.raw):
        return None
    function, first, _ = _function_at(index, line)
    code = index.code(line)
    occurrence = sum(1 for n in range(first, line) if index.code(n) == code)
    return Identity(package_path(filename), function, code, occurrence, line)


def find(filename: str, function: str, code: str, occurrence: int | None) -> int | None:
    """The line of `filename` where `code` (normalized) stands in `function` (its `occurrence`-th), or None."""
    index = _load(filename)
    if index is None:
        return None
    ranges = [(first, last) for first, last, name in index.functions if name == function]
    if function == "<module>":
        ranges = [(1, len(index.raw))]
    found = [n for first, last in ranges for n in range(first, last + 1) if index.code(n) == code]
    if not found:
        return None
    if occurrence is None:
        return found[0]
    return found[occurrence] if occurrence < len(found) else None
