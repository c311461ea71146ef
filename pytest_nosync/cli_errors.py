"""The command line's usage errors: what was asked cannot be done, in one sentence and exit status 4. Shared by
cli.py and the census's outputs (census/outputs/), which read and write files the same way."""

from __future__ import annotations

import json
from collections.abc import Callable

from .run_report import check_writable as _check_writable


class UsageError(ValueError):
    """What was asked cannot be done, in one sentence: exit status 4."""


def unreadable(what: str, path: str, exc: Exception) -> UsageError:
    """One sentence for a file that could not be read as `what`: the reader's own sentence for one that is not what
    it should be, the reason for one that cannot be read or is not JSON."""
    if isinstance(exc, FileNotFoundError):
        reason = "it does not exist"
    elif isinstance(exc, IsADirectoryError):
        reason = "it is a directory"
    elif isinstance(exc, OSError):  # no permission; a .gz that is not gzip
        reason = exc.strerror or str(exc)
    elif isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError)):
        reason = f"it is not JSON ({exc})"
    else:
        return UsageError(str(exc))
    return UsageError(f"cannot read {what} {path}: {reason}")


def check_writable(option: str, path: str | None, example: str) -> None:
    """Before the work: an output that cannot be written stops the command with a sentence, not after it ran."""
    if path:
        try:
            _check_writable(path, example)
        except OSError as exc:
            raise UsageError(f"{option}: {exc}" if option else str(exc)) from None


def write(option: str, path: str, write: Callable[[], object]) -> None:
    """Write an output; one that became unwritable since it was checked is a sentence too."""
    try:
        write()
    except OSError as exc:
        where = f"{option}: " if option else ""
        raise UsageError(f"{where}could not write {path}: {exc.strerror or exc}") from None


def write_json(option: str, path: str | None, content: object) -> None:
    """Write `content` as JSON where `option` asked for it (nothing without a path)."""

    def dump() -> None:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(content, fh, indent=1)

    if path:
        write(option, path, dump)
