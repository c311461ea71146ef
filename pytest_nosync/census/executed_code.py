"""Which Python code ran inside a block: the code objects started there, each once.

A check is re-run when a change touches code it ran, so the record must come from the run itself, not from file
names. Python 3.12+ uses sys.monitoring: a PY_START callback that returns DISABLE after a code object's first start,
so a hot loop pays for its functions once, not per call. 3.10/3.11 have only sys.setprofile, whose callback runs on
every call and return of the recording thread (threads started inside the block are not recorded there; with
monitoring every thread is).

Line numbers are those of the files as they were when the code ran; `to_json` also stores each kept file's git blob
hash, so a reader can tell whether a record still matches a file's lines.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import sys
import types
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .imported_code import file_stamp, imported_files

FORMAT_VERSION = 2  # 2: with the files whose module-level data the code imports (a record of 1 runs once more)
# The ids sys.monitoring leaves unnamed (0, 1, 2 and 5 are the debugger's, coverage's, the profiler's, the optimizer's).
MONITORING_TOOL_IDS = (3, 4)
_COMPREHENSIONS = ("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>")


class RecorderBusy(RuntimeError):
    """The recorder cannot install itself without breaking another tool (a C-level profiler, all tool ids taken)."""


@dataclass(frozen=True, order=True)
class CodeSpan:
    file: str  # absolute path (co_filename resolved)
    qualname: str
    first_line: int  # co_firstlineno: the first decorator's line for a decorated function
    last_line: int


Ranges = tuple[tuple[int, int], ...]


@dataclass
class ExecutedCode:
    """What ran in a `record_executed()` block; `spans` is filled when the block ends."""

    backend: str
    spans: frozenset[CodeSpan] = frozenset()
    # files none of whose functions ran whose module-level code the recorded code reads (imported_code; with roots)
    imported: frozenset[str] = frozenset()
    # (first, last) of every function of a recorded file, ran or not: a changed line outside all is module-level
    _defs: dict[str, Ranges | None] = field(default_factory=dict, repr=False)
    _blobs: dict[str, str | None] = field(default_factory=dict, repr=False)
    _stamps: dict[str, tuple[int, int] | None] = field(default_factory=dict, repr=False)  # (mtime_ns, size) at the end

    def files(self) -> set[str]:
        return {span.file for span in self.spans} | self.imported

    def defs(self, file: str) -> Ranges | None:
        """The functions of `file` as they were when its code ran; None when the file has changed since and they
        were not taken then (a reader must then treat any change in it as module-level)."""
        if file not in self._defs:
            if not self._unchanged(file):
                return None
            self._defs[file] = _function_ranges(file)
        return self._defs[file]

    def functions_ran(self, file: str) -> list[CodeSpan]:
        """The spans of `file` that are functions. A module's or a class body's code, which ran where the module was
        first imported inside the record, is module-level code: its span covers functions that never ran. Every span
        where the file's functions are unknown."""
        defs = self.defs(file)
        spans = [span for span in self.spans if span.file == file]  # a record runs some hundred functions
        if defs is None:
            return spans
        functions = set(defs)
        return [span for span in spans if (span.first_line, span.last_line) in functions]

    def blob(self, file: str) -> str | None:
        """The git blob hash of `file` as it ran (None: changed since, or unreadable)."""
        if file not in self._blobs:
            if not self._unchanged(file):
                return None
            self._blobs[file] = blob_sha(file)
        return self._blobs[file]

    def _unchanged(self, file: str) -> bool:
        return file not in self._stamps or self._stamps[file] == file_stamp(file)

    def to_json(self, roots: Iterable[Path]) -> dict[str, Any]:
        """The record as JSON-friendly data, files under `roots` only, each named `<root name>/<path in root>`
        (diffusers/schedulers/x.py), which is the same in a checkout's src/ and in site-packages."""
        anchors = _anchors(roots)
        files: dict[str, dict[str, Any]] = {}
        for file in sorted(self.files()):
            key = _key_under(file, anchors)
            if key is not None:
                defs = self.defs(file)
                files[key] = {"blob": self.blob(file), "ran": [], "defs": None if defs is None else list(defs)}
        for span in sorted(self.spans):
            key = _key_under(span.file, anchors)
            if key is not None:
                files[key]["ran"].append([span.qualname, span.first_line, span.last_line])
        return {"version": FORMAT_VERSION, "backend": self.backend, "files": files}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], roots: Iterable[Path]) -> ExecutedCode:
        """A record read back, its files placed under the root of the same name (files of no given root dropped)."""
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(f"executed-code record version {data.get('version')!r} is not {FORMAT_VERSION}")
        anchors = {name: root for root, name in _anchors(roots)}
        record = cls(backend=str(data.get("backend", "")))
        spans: set[CodeSpan] = set()
        imported: set[str] = set()
        for key, entry in data["files"].items():
            name, _, rest = key.partition("/")
            if name not in anchors:
                continue
            path = str(Path(anchors[name], rest))
            spans.update(CodeSpan(path, q, first, last) for q, first, last in entry["ran"])
            if not entry["ran"]:
                imported.add(path)
            defs = entry["defs"]
            record._defs[path] = None if defs is None else tuple((first, last) for first, last in defs)
            record._blobs[path] = entry["blob"]
        record.spans, record.imported = frozenset(spans), frozenset(imported)
        return record


@contextmanager
def record_executed(backend: str | None = None, roots: Iterable[Path] | None = None) -> Iterator[ExecutedCode]:
    """Record the code objects that start running inside the block.

    `backend` is "monitoring" (3.12+, the default there) or "setprofile" (the default before). The previous
    profiler or monitoring state is restored however the block ends; a Python-level sys.setprofile user already
    installed is chained (it keeps receiving its events); a C-level one (cProfile, torch.profiler's stack recorder)
    cannot be chained from Python, so the recorder refuses with RecorderBusy rather than silence it.

    With `roots`, only code under them is kept, with the files none of whose functions ran whose module-level code
    it reads (imported_code), and their files' functions and blob hashes are taken as the block ends, so the record
    stays right if the files change later in the process.
    """
    backend = backend or ("monitoring" if hasattr(sys, "monitoring") else "setprofile")
    anchors = None if roots is None else _anchors(roots)
    record = ExecutedCode(backend=backend)
    seen: set[types.CodeType] = set()
    if backend == "monitoring":
        recorder = _monitoring(seen)
    elif backend == "setprofile":
        recorder = _profiling(seen)
    else:
        raise ValueError(f"unknown backend {backend!r}: use 'monitoring' or 'setprofile'")
    try:
        with recorder:
            yield record
    finally:  # a block that raised still ran its code: a check that errors is selected like one that fails
        spans = {_span(code) for code in seen if _recordable(code.co_filename)}
        if anchors is not None:
            spans = {span for span in spans if _key_under(span.file, anchors) is not None}
        record.spans = frozenset(spans)
        record._stamps = {file: file_stamp(file) for file in record.files()}
        if anchors is not None:
            ran = {file: (record.defs(file) or (), _lines(record.functions_ran(file))) for file in record.files()}
            record.imported = imported_files(ran, anchors)
            record._stamps |= {file: file_stamp(file) for file in record.imported}
            for file in record.files():
                record.defs(file)
                record.blob(file)


@contextmanager
def _monitoring(seen: set[types.CodeType]) -> Iterator[None]:
    if not hasattr(sys, "monitoring"):
        raise RecorderBusy(f"sys.monitoring needs Python 3.12+, this is {sys.version.split()[0]}")
    mon = sys.monitoring
    tool = next((i for i in MONITORING_TOOL_IDS if mon.get_tool(i) is None), None)
    if tool is None:
        taken = ", ".join(f"{i}: {mon.get_tool(i)}" for i in MONITORING_TOOL_IDS)
        raise RecorderBusy(f"every free sys.monitoring tool id is taken ({taken}), so code cannot be recorded")

    def on_start(code: types.CodeType, offset: int) -> Any:
        seen.add(code)
        return mon.DISABLE

    mon.use_tool_id(tool, "pytest-nosync executed code")
    try:
        # DISABLE outlives the block: without this a code object recorded by an earlier block would not fire again.
        # It re-enables other tools' disabled events too, which they must tolerate (they asked for the events).
        mon.restart_events()
        mon.register_callback(tool, mon.events.PY_START, on_start)
        mon.set_events(tool, mon.events.PY_START)
        yield
    finally:
        mon.set_events(tool, 0)
        mon.register_callback(tool, mon.events.PY_START, None)
        mon.free_tool_id(tool)


@contextmanager
def _profiling(seen: set[types.CodeType]) -> Iterator[None]:
    previous = sys.getprofile()
    if previous is not None and not _python_callable(previous):
        raise RecorderBusy(
            f"a C-level profiler ({type(previous).__name__}) is installed with sys.setprofile and would be lost, "
            "so code is not recorded"
        )
    add = seen.add
    if previous is None:

        def profile(frame: types.FrameType, event: str, arg: Any) -> None:
            if event == "call":
                add(frame.f_code)

    else:

        def profile(frame: types.FrameType, event: str, arg: Any) -> None:
            if event == "call":
                add(frame.f_code)
            previous(frame, event, arg)

    sys.setprofile(profile)
    try:
        yield
    finally:
        # Only ours is taken down: a profiler installed inside the block and still there is its owner's to remove.
        if sys.getprofile() is profile:
            sys.setprofile(previous)


def _lines(spans: Iterable[CodeSpan]) -> Ranges:
    return tuple((span.first_line, span.last_line) for span in spans)


def _recordable(filename: str) -> bool:
    """Source files only (not <string>, <frozen ...>), and not the recorder's own exit path."""
    return not filename.startswith("<") and filename != __file__


def _python_callable(obj: Any) -> bool:
    """A function, method or instance of a Python class with __call__: something Python code can call on."""
    call = inspect.getattr_static(type(obj), "__call__", None)
    return isinstance(obj, (types.FunctionType, types.MethodType)) or isinstance(call, types.FunctionType)


def _span(code: types.CodeType) -> CodeSpan:
    return CodeSpan(
        _resolved(code.co_filename), getattr(code, "co_qualname", code.co_name), code.co_firstlineno, _last_line(code)
    )


def _last_line(code: types.CodeType) -> int:
    """The last source line of a code object (end positions on 3.11+, which see a call's closing parenthesis)."""
    last = code.co_firstlineno
    if hasattr(code, "co_positions"):
        for _, end, _, _ in code.co_positions():
            if end is not None and end > last:
                last = end
    for _, _, line in code.co_lines():
        if line is not None and line > last:
            last = line
    return last


@functools.lru_cache(maxsize=4096)
def _resolved(filename: str) -> str:
    return os.path.realpath(filename)


def _function_ranges(file: str) -> Ranges:
    """(first, last) of every function in a file, nested ones too; class bodies and module-level comprehensions
    run at import like module code, so they are not functions here."""
    try:
        stat = os.stat(file)
    except OSError:
        return ()
    return _function_ranges_cached(file, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=1024)
def _function_ranges_cached(file: str, mtime_ns: int, size: int) -> Ranges:
    try:
        with open(file, "rb") as handle:
            module = compile(handle.read(), file, "exec", dont_inherit=True)
    except (OSError, SyntaxError, ValueError):
        return ()
    ranges: list[tuple[int, int]] = []
    stack = [module]
    while stack:
        code = stack.pop()
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        if code.co_flags & inspect.CO_NEWLOCALS and code.co_name not in _COMPREHENSIONS:
            ranges.append((code.co_firstlineno, _last_line(code)))
    return tuple(sorted(ranges))


def _anchors(roots: Iterable[Path]) -> list[tuple[str, str]]:
    anchors = [(_resolved(str(root)), Path(root).name) for root in roots]
    names = [name for _, name in anchors]
    if len(set(names)) != len(names):
        raise ValueError(f"roots must have distinct names, got {sorted(names)}")
    return anchors


def _key_under(path: str, anchors: list[tuple[str, str]]) -> str | None:
    for root, name in anchors:
        if path.startswith(root + os.sep):
            return f"{name}/{Path(path[len(root) + 1 :]).as_posix()}"
    return None


def blob_sha(file: str) -> str | None:
    """The file's git blob hash (what `git hash-object` prints), to tell later whether its lines moved."""
    try:
        data = Path(file).read_bytes()
    except OSError:
        return None
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
