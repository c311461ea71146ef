"""Reversible attribute patches: every global the plugin touches is put back, also when code raises; and the bar a
patched `progress_bar` returns in place of the pipeline's own (WrappedBar)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

_MISSING = object()


class Patches:
    """A stack of undo actions, run in reverse order by `undo()` (idempotent)."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def setattr(self, owner: Any, name: str, value: Any) -> Any:
        """Set owner.name = value; undo restores the previous value, or removes it if it was inherited."""
        own = owner.__dict__ if hasattr(owner, "__dict__") else {}
        previous = own.get(name, _MISSING)
        original = getattr(owner, name)
        setattr(owner, name, value)

        def restore() -> None:
            if previous is _MISSING:
                with contextlib.suppress(AttributeError):
                    delattr(owner, name)
            else:
                setattr(owner, name, previous)

        self._undo.append(restore)
        return original

    def push(self, undo: Callable[[], None]) -> None:
        self._undo.append(undo)

    def undo(self) -> None:
        errors: list[BaseException] = []
        while self._undo:
            action = self._undo.pop()
            try:
                action()
            except Exception as exc:  # keep undoing the rest; report the first failure after
                errors.append(exc)
        if errors:
            raise errors[0]


class WrappedBar:
    """A pipeline's progress bar, wrapped: entering and leaving it, and whatever a subclass does not define, are the
    bar's own (a subclass adds what it watches: the guard's loop, the count of updates)."""

    def __init__(self, bar: Any) -> None:
        self._bar = bar

    def __enter__(self) -> Any:
        self._bar.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._bar.__exit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._bar, name)
