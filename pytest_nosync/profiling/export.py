"""Trace files: one per test id, in a directory, as Chrome JSON that Perfetto opens (optionally gzipped).

The nosync ranges (steps, regions) go on a track of their own in the written file. On the host thread they
would overlap Python functions without nesting in them (a step opens in the denoiser's forward pre-hook and
closes in the step-end callback), and Perfetto drops such slices (the JSON format requires nesting per
thread). The range keeps the thread it ran on in its args, so Trace reads it back in place.
"""

from __future__ import annotations

import getpass
import gzip as gzip_module
import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from .config import KEEP_BYTES, KEEP_TRACES
from .trace import HOST_TID_ARG, REGION_PREFIX

NOSYNC_TRACK = "nosync steps and regions"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_TRACE_NAME = re.compile(r"^[A-Za-z0-9._-]+\.json(\.gz)?$")  # what trace_path names a file
_MAX_NAME = 120
_written: set[str] = set()  # files this process wrote: a second block of the same test gets its own


def file_stem(test_id: str) -> str:
    """A file name for a test id: `tests/test_x.py::test_y[a-1]` → `tests_test_x.py__test_y_a-1`."""
    stem = _UNSAFE.sub("_", test_id.replace("::", "__")).strip("._") or "nosync"
    if len(stem) > _MAX_NAME:  # long parametrised ids: keep the start, make the end unique
        stem = stem[: _MAX_NAME - 9] + "-" + hashlib.sha1(test_id.encode()).hexdigest()[:8]
    return stem


def trace_path(directory: str, test_id: str, gzip: bool = False) -> str:
    """The file of `test_id`'s trace in `directory`; a later block of the same test in this process gets
    `-2`, `-3`, ... (a file left by an earlier run is overwritten)."""
    suffix = ".json.gz" if gzip else ".json"
    stem = os.path.join(directory, file_stem(test_id))
    path, n = stem + suffix, 1
    while os.path.abspath(path) in _written:
        n += 1
        path = f"{stem}-{n}{suffix}"
    _written.add(os.path.abspath(path))
    return path


def check_directory(directory: str) -> None:
    """Raise OSError with a sentence if traces cannot be written in `directory`. Creates nothing: the
    directory is made when a trace is kept, so runs that keep none leave no empty directory behind."""
    path = Path(directory)
    if path.exists() and not path.is_dir():
        raise OSError(f"{directory} is a file, not a directory")
    existing = path
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise OSError(f"{existing} is a file, so {directory} cannot be created")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OSError(f"{existing} is not writable")


def private_temp_dir(name: str) -> Path:
    """A directory of this user's under the temporary directory (mode 0700: other users of a shared machine can
    neither read what a run wrote nor plant files where it writes). OSError with a sentence when another user made
    it first: its name is guessable, so someone could have, to read or replace what is written there."""
    path = Path(tempfile.gettempdir()) / f"pytest-nosync-{getpass.getuser()}" / name
    for directory in (path.parent, path):  # the parent checked before anything is made in it
        directory.mkdir(mode=0o700, exist_ok=True)
        if hasattr(os, "getuid") and directory.lstat().st_uid != os.getuid():
            raise OSError(f"{directory} belongs to another user: remove it, or set TMPDIR to a directory of yours")
        directory.chmod(0o700)
    return path


def fresh_private_dir(name: str, prefix: str, keep: int = KEEP_TRACES) -> Path:
    """A new directory under private_temp_dir(name), for one command's outputs. Of the earlier ones there (that
    directory holds nothing else of anyone's), the newest `keep` - 1 stay: the temporary directory is bounded too."""
    parent = private_temp_dir(name)
    earlier = [p for p in parent.iterdir() if p.is_dir() and not p.is_symlink()]
    earlier.sort(key=_mtime, reverse=True)
    for old in earlier[keep - 1 :]:
        shutil.rmtree(old, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # removed meanwhile
        return 0.0


def prune(directory: str | Path, since: float, keep: int = KEEP_TRACES, keep_bytes: int = KEEP_BYTES) -> list[Path]:
    """Remove the oldest traces from `directory` so that it holds the newest `keep` of them and at most `keep_bytes`;
    a trace modified at or after `since` (the current run's) is kept whatever the bound. Only files named as
    trace_path names them are counted or removed: anything else there stays. Returns the removed files."""
    try:
        candidates = [p for p in Path(directory).iterdir() if _TRACE_NAME.match(p.name)]
    except OSError:  # no such directory yet: nothing was kept there
        return []
    found = []
    for path in candidates:
        try:
            stat = path.lstat()
        except OSError:  # removed meanwhile, by another run
            continue
        if path.is_file() and not path.is_symlink():
            found.append((stat.st_mtime, stat.st_size, path))
    found.sort(key=lambda f: f[0], reverse=True)
    removed, count, total = [], 0, 0
    for mtime, size, path in found:
        count, total = count + 1, total + size
        if mtime >= since or (count <= keep and total <= keep_bytes):
            continue
        try:
            path.unlink()
        except OSError:
            continue
        removed.append(path)
    return removed


def load_raw(path: str) -> dict[str, Any]:
    opener = gzip_module.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        text = fh.read()
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        doc = json.loads(escape_event_names(text))  # still invalid: the caller's error, as before
    return doc if isinstance(doc, dict) else {"traceEvents": doc}


# torch's chrome-trace export writes event names unescaped: now and then its profiler records a Python frame named `"""`
# (`torch/profiler/_cupti_monitor.py(0): """`, torch 2.13), and the file is not JSON. Each name is a line of its own.
_NAME_LINE = re.compile(r'^(\s*"name": ")(.*)(",?)$', re.M)
_BARE_QUOTE = re.compile(r'(?<!\\)"')


def escape_event_names(text: str) -> str:
    """torch's exported trace text with the quotes inside event names escaped."""
    return _NAME_LINE.sub(lambda m: m.group(1) + _BARE_QUOTE.sub(r'\\"', m.group(2)) + m.group(3), text)


def for_perfetto(doc: dict[str, Any]) -> dict[str, Any]:
    """Move the nosync ranges of each process to a track of their own (see the module doc)."""
    events = doc.get("traceEvents", [])
    tracks: dict[Any, int] = {}
    for event in events:
        # host ranges only: kineto's projections of them onto the GPU streams (gpu_user_annotation) stay put
        host_range = event.get("cat") == "user_annotation" and event.get("ph") == "X"
        if host_range and str(event.get("name", "")).startswith(REGION_PREFIX):
            pid = event.get("pid")
            if pid not in tracks:
                tracks[pid] = _track_id(events, pid)
            event.setdefault("args", {})[HOST_TID_ARG] = event.get("tid")
            event["tid"] = tracks[pid]
    for pid, tid in tracks.items():
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": NOSYNC_TRACK}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": -1}})
    return doc


def _track_id(events: list[dict[str, Any]], pid: Any) -> int:
    used = {e.get("tid") for e in events if e.get("pid") == pid}
    tid = 1
    while tid in used:
        tid += 1
    return tid


def write(doc: dict[str, Any], path: str, gzip: bool | None = None) -> str:
    """Write the trace (gzip when `gzip`, or when the name ends in .gz) through a temporary file."""
    gzip = path.endswith(".gz") if gzip is None else gzip
    if gzip and not path.endswith(".gz"):
        path += ".gz"
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    opener = gzip_module.open if gzip else open
    with opener(tmp, "wt", encoding="utf-8") as fh:
        json.dump(doc, fh)
    os.replace(tmp, path)
    return path
