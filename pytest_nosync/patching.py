"""Reversible attribute patches: every global the plugin touches is put back, also when code raises."""

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
