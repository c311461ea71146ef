"""Building a stand-in repository once into a directory, reusing it while it is complete and current."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no file locks
    fcntl = None

from .registry import STANDINS
from .standin import StandIn

COMPLETE_MARKER = ".nosync-standin-complete"
LOCKS = ".locks"  # in the root: one file per repository, locked while a process builds it


def default_root() -> Path:
    """Where built stand-ins are kept between runs: the user's cache directory."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pytest-nosync" / "hub-standins"


def is_complete(standin: StandIn, directory: Path) -> bool:
    marker = directory / COMPLETE_MARKER
    return marker.is_file() and marker.read_text().strip() == standin.commit_hash


def materialize(repo_id: str, root: Path) -> Path:
    """Build the stand-in for `repo_id` into `root/<id with -- for />`, or reuse it there; return that directory.

    The repository is built in a temporary sibling and renamed into place with its completion marker, so a
    half-written build (an interrupted run) is never taken for a complete one. One process builds it while the
    others wait (the xdist workers of a census on a fresh runner would each build every repository otherwise).
    """
    standin = STANDINS[repo_id]
    root = Path(root)
    target = root / standin.folder_name
    if is_complete(standin, target):
        return target
    root.mkdir(parents=True, exist_ok=True)
    with _building(root / LOCKS / standin.folder_name):
        return _build(standin, root, target)


def _build(standin: StandIn, root: Path, target: Path) -> Path:
    if is_complete(standin, target):  # another process built it while this one waited
        return target
    staging = Path(tempfile.mkdtemp(prefix=f".{standin.folder_name}-", dir=root))
    try:
        standin.build(staging)
        (staging / COMPLETE_MARKER).write_text(standin.commit_hash + "\n")
        if target.exists():
            if is_complete(standin, target):  # another process finished first
                return target
            shutil.rmtree(target, ignore_errors=True)  # an older version or an unfinished copy
        try:
            staging.rename(target)
        except OSError:
            if not is_complete(standin, target):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


@contextlib.contextmanager
def _building(lock: Path) -> Iterator[None]:
    """Hold `lock` (an exclusive lock on the file) for the block; where file locks do not exist, nothing is held and
    concurrent builds only repeat work."""
    if fcntl is None:
        yield
        return
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
