"""Turn a Python stack into the file:line a contributor should open.

A sync is raised by whatever Python frame called into torch, and that frame is sometimes inside torch
itself (torch/functional.py, torch/_tensor.py, ...). The place to blame is the first frame outside
torch and outside this plugin's machinery; the frames in between stay in the stack for context.
"""

from __future__ import annotations

import functools
import linecache
import os
import sys
import types
from collections.abc import Iterable
from pathlib import Path

import torch

from .findings import Frame

_TORCH_DIR = str(Path(torch.__file__).resolve().parent) + os.sep
_PLUGIN_DIR = str(Path(__file__).resolve().parent) + os.sep
_SUITE_DIR = _PLUGIN_DIR + "suite" + os.sep
_TARGETS_DIR = _SUITE_DIR + "targets" + os.sep
_STDLIB_PLUMBING = ("warnings.py", "contextlib.py")

STACK_DEPTH = 8


@functools.lru_cache(maxsize=4096)
def _real(filename: str) -> str:
    try:
        return str(Path(filename).resolve())
    except (OSError, RuntimeError):
        return filename


def is_internal(filename: str) -> bool:
    """True for frames that never get the blame: torch, this plugin's machinery, warnings plumbing."""
    if filename.startswith("<"):
        return filename.startswith("<frozen")
    path = _real(filename)
    if path.startswith(_TORCH_DIR):
        return True
    if path.startswith(_PLUGIN_DIR):
        return not _is_user_facing(path)
    return os.path.basename(path) in _STDLIB_PLUMBING and "site-packages" not in path


@functools.lru_cache(maxsize=1024)
def _is_user_facing(path: str) -> bool:
    """The plugin's own suite test modules and target builders are user-facing code: syncs there are blamed on
    them. The suite's harness (checks, regression drivers) is plumbing like the rest of the plugin."""
    if path.startswith(_TARGETS_DIR):
        return True
    return os.path.dirname(path) + os.sep == _SUITE_DIR and os.path.basename(path).startswith("test_")


def frames_from(frame: types.FrameType | None, limit: int = 64) -> list[Frame]:
    """The stack from `frame` outwards (innermost first), with source lines."""
    return [with_line(f) for f in raw_frames(frame, limit)]


def raw_frames(frame: types.FrameType | None, limit: int = 64) -> list[Frame]:
    """Like frames_from without reading source lines: cheap enough for a hot path."""
    out: list[Frame] = []
    while frame is not None and len(out) < limit:
        code = frame.f_code
        out.append(Frame(code.co_filename, frame.f_lineno or code.co_firstlineno, code.co_name))
        frame = frame.f_back
    return out


def with_line(frame: Frame) -> Frame:
    if frame.line:
        return frame
    return Frame(frame.filename, frame.lineno, frame.function, linecache.getline(frame.filename, frame.lineno).strip())


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
    """
    frames = [f for f in frames if not _is_plumbing(f.filename)]
    if not frames:
        return "<unknown>:0", ()
    blamed = next((i for i, f in enumerate(frames) if not is_internal(f.filename)), None)
    if blamed is None:
        return frames[0].where, tuple(with_line(f) for f in frames[:STACK_DEPTH])
    return frames[blamed].where, tuple(with_line(f) for f in frames[: blamed + STACK_DEPTH])


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
    line = linecache.getline(code.co_filename, lineno or frame.f_lineno or 0)
    positions = getattr(code, "co_positions", None)
    if positions is None:
        return line.strip(), ""
    index = lasti // 2
    try:
        start, end, col, end_col = list(positions())[index]
        opname = _opname(code, lasti)
    except (IndexError, ValueError):
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
    import dis

    try:
        return dis.opname[code.co_code[lasti]]
    except IndexError:
        return ""
