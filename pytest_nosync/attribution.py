"""Turn a Python stack into the file:line a contributor should open.

A sync is raised by whatever Python frame called into torch, and that frame is sometimes inside torch
itself (torch/functional.py, torch/_tensor.py, ...). The place to blame is the first frame outside
torch and outside this plugin's machinery; the frames in between stay in the stack for context.
"""

from __future__ import annotations

import ast
import builtins
import dis
import functools
import inspect
import itertools
import linecache
import os
import sys
import types
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import torch

from .findings import Frame, Location

_TORCH_DIR = str(Path(torch.__file__).resolve().parent) + os.sep
_PLUGIN_DIR = str(Path(__file__).resolve().parent) + os.sep
_USER_CODE: list[Callable[[str], bool]] = []  # of this plugin's files, those blamed like a user's (see user_code)
_STDLIB_PLUMBING = ("warnings.py", "contextlib.py")

STACK_DEPTH = 8


@functools.lru_cache(maxsize=4096)
def _real(filename: str) -> str:
    try:
        return str(Path(filename).resolve())
    except (OSError, RuntimeError):
        return filename


@functools.lru_cache(maxsize=4096)  # asked for every frame of every sync's stack
def is_internal(filename: str) -> bool:
    """True for frames that never get the blame: torch, this plugin's machinery, warnings plumbing."""
    if filename.startswith("<"):
        # torch.fx's generated forward (`<eval_with_key>.N ...`) is torch's: the line that called the graph gets the
        # blame, and a place stays the same from run to run (N counts the graphs made so far)
        return filename.startswith(("<frozen", "<eval_with_key>"))
    path = _real(filename)
    if path.startswith(_TORCH_DIR):
        return True
    if path.startswith(_PLUGIN_DIR):
        return not _is_user_facing(path)
    return os.path.basename(path) in _STDLIB_PLUMBING and "site-packages" not in path


def user_code(is_user_code: Callable[[str], bool]) -> None:
    """Say which of this plugin's own files are code a finding is blamed on, like a user's (the suite's test modules
    and target builders, given by the suite); the rest of the plugin is plumbing, never blamed."""
    if is_user_code not in _USER_CODE:
        _USER_CODE.append(is_user_code)
        for cached in (is_internal, _is_user_facing, _role, _is_plumbing):
            cached.cache_clear()


@functools.lru_cache(maxsize=1024)
def _is_user_facing(path: str) -> bool:
    return any(is_user_code(path) for is_user_code in _USER_CODE)


def frames_from(frame: types.FrameType | None, limit: int = 64) -> Iterator[Frame]:
    """The stack from `frame` outwards (innermost first), lazily: `attribute` stops at the frames a finding keeps
    (a sync site is often 40+ frames deep in a pipeline)."""
    count = 0
    seen = _FRAMES.entries  # read inline: a function call per frame cost more than the frame
    while frame is not None and count < limit:
        code = frame.f_code
        lineno = frame.f_lineno or code.co_firstlineno
        entry = seen.get((id(code), lineno))
        yield entry[1] if entry is not None and entry[0] is code else _frame_at(code, lineno)
        frame = frame.f_back
        count += 1


def raw_frames(frame: types.FrameType | None, limit: int = 64) -> list[Frame]:
    """The stack from `frame` outwards as a list (an allocation site kept as a key)."""
    return list(frames_from(frame, limit))


def with_line(frame: Frame) -> Frame:
    if frame.line:
        return frame
    return Frame(frame.filename, frame.lineno, frame.function, linecache.getline(frame.filename, frame.lineno).strip())


class _PerCode:
    """A bounded cache keyed by a code object's identity and a position in it, the code object held alive beside each
    answer (a sync site repeats every step; hashing a code object would hash all its constants)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self.entries: dict[tuple[int, Any], tuple[types.CodeType, Any]] = {}

    def get(self, code: types.CodeType, position: Any, compute: Callable[[], Any]) -> Any:
        key = (id(code), position)
        entry = self.entries.get(key)
        if entry is not None and entry[0] is code:
            return entry[1]
        if len(self.entries) >= self._size:
            self.entries.clear()
        value = compute()
        self.entries[key] = (code, value)
        return value


_FRAMES = _PerCode(8192)
_EXPRESSIONS = _PerCode(4096)


def _frame_at(code: types.CodeType, lineno: int) -> Frame:
    """A frame with its source line, built once per code object and line."""
    return _FRAMES.get(
        code,
        lineno,
        lambda: Frame(code.co_filename, lineno, code.co_name, linecache.getline(code.co_filename, lineno).strip()),
    )


def frames_from_traceback(tb: types.TracebackType | None) -> list[Frame]:
    """The frames of an exception's traceback, innermost first (where it was raised)."""
    frames: list[Frame] = []
    while tb is not None:
        code = tb.tb_frame.f_code
        line = linecache.getline(code.co_filename, tb.tb_lineno).strip()
        frames.append(Frame(code.co_filename, tb.tb_lineno, code.co_name, line))
        tb = tb.tb_next
    frames.reverse()
    return frames


def attribute(frames: Iterable[Frame]) -> tuple[str, tuple[Frame, ...]]:
    """Return (where, short stack): the first frame outside torch/plugin and up to STACK_DEPTH frames.

    The short stack starts at the innermost frame that is not plugin or warnings plumbing (so a frame
    inside torch that issued the sync stays visible) and ends STACK_DEPTH frames past the blamed one.
    Frames past the short stack are not read.
    """
    kept: list[Frame] = []
    blamed: int | None = None
    for frame in frames:
        role = _role(frame.filename)
        if role == _PLUMBING:
            continue
        kept.append(frame)
        if blamed is None and role == _BLAMED:
            blamed = len(kept) - 1
        if blamed is not None and len(kept) >= blamed + STACK_DEPTH:
            break
    if not kept:
        return Location("<unknown>", 0), ()
    short = kept[:STACK_DEPTH] if blamed is None else kept[: blamed + STACK_DEPTH]
    return kept[blamed or 0].where, tuple(f if f.line else with_line(f) for f in short)


_PLUMBING, _INTERNAL, _BLAMED = 0, 1, 2


@functools.lru_cache(maxsize=4096)
def _role(filename: str) -> int:
    """What attribution does with a frame of this file: skip it (plumbing), keep it for context (torch), or blame it."""
    if _is_plumbing(filename):
        return _PLUMBING
    return _INTERNAL if is_internal(filename) else _BLAMED


@functools.lru_cache(maxsize=4096)
def _is_plumbing(filename: str) -> bool:
    path = _real(filename)
    if path.startswith(_PLUGIN_DIR) and not _is_user_facing(path):
        return True
    return os.path.basename(path) in _STDLIB_PLUMBING and "site-packages" not in path


def caller_frame(skip_plumbing: bool = True) -> types.FrameType | None:
    """The innermost frame of the code that called into the plugin (warnings/plugin frames skipped)."""
    frame = sys._getframe(1)
    while skip_plumbing and frame is not None and _is_plumbing(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def executing_expression(
    frame: types.FrameType | None, lasti: int | None = None, lineno: int | None = None
) -> tuple[str, str]:
    """(source text, opcode name) of the expression `frame` is executing (or was, at `lasti`).

    Python 3.11+ keeps column positions per instruction, so `x = a.item() + b.tolist()` tells which of
    the two calls is running. On 3.10 the whole source line is returned.
    """
    if frame is None:
        return "", ""
    code = frame.f_code
    lasti = frame.f_lasti if lasti is None else lasti
    lineno = lineno or frame.f_lineno or 0
    return _EXPRESSIONS.get(code, (lasti, lineno), lambda: _expression_at(code, lasti, lineno))


def subscripted(frame: types.FrameType | None, expression: str) -> object | None:
    """The value `expression` (`a.b[...]`) indexes, read from `frame` where it is a name or a chain of attributes
    (no call runs, nothing is evaluated); None where it cannot be read so."""
    if frame is None:
        return None
    try:
        node = ast.parse(expression, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(node, ast.Subscript):
        return None
    names, value = [], node.value
    while isinstance(value, ast.Attribute):
        names.append(value.attr)
        value = value.value
    if not isinstance(value, ast.Name):
        return None
    scopes = (frame.f_locals, frame.f_globals, vars(builtins))
    found = next((scope[value.id] for scope in scopes if value.id in scope), None)
    for name in reversed(names):
        try:
            found = inspect.getattr_static(found, name)  # a plain attribute's value; a property is not run
        except AttributeError:
            return None
    return found


def _expression_at(code: types.CodeType, lasti: int, lineno: int) -> tuple[str, str]:
    """Looked up once per instruction: finding an instruction's position walks the code object's position table (a
    pipeline's `__call__` has thousands of entries)."""
    line = linecache.getline(code.co_filename, lineno)
    positions = getattr(code, "co_positions", None)
    if positions is None:
        return line.strip(), ""
    try:
        start, end, col, end_col = next(itertools.islice(positions(), lasti // 2, None))
        opname = _opname(code, lasti)
    except (StopIteration, ValueError):
        return line.strip(), ""
    if start is None or col is None or end_col is None:
        return line.strip(), opname
    if start == end:
        return line[col:end_col].strip() or line.strip(), opname
    lines = [linecache.getline(code.co_filename, n) for n in range(start, (end or start) + 1)]
    lines[-1] = lines[-1][:end_col]
    lines[0] = lines[0][col:]
    return " ".join(part.strip() for part in lines), opname


def _opname(code: types.CodeType, lasti: int) -> str:
    try:
        return dis.opname[code.co_code[lasti]]
    except IndexError:
        return ""
