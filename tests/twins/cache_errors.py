"""Bug twins for the `error` kind: a cache technique that raises.

`raise_in_the_hook` stands in for a cache hook that cannot take a block's outputs (the way FirstBlockCache fails on
Flux 2 in diffusers 0.42). `no_invalidation` is the state of diffusers before the fix of its issue #14037: enabling a
cache does not refresh the hook registry's cached child list, so a pipeline that ran once without the cache raises
"No context is set" on its first cached call.
"""

from __future__ import annotations

import inspect
from typing import Any


def raise_in_the_hook(self: Any, module: Any, *args: Any, **kwargs: Any) -> Any:
    raise TypeError("planted: the cache hook cannot take this block's outputs")  # twin: error


def no_invalidation(self: Any) -> None:
    """HookRegistry.invalidate_child_registries_cache before it existed."""


def raise_line() -> str:
    lines, start = inspect.getsourcelines(raise_in_the_hook)
    offset = next(i for i, line in enumerate(lines) if "# twin:" in line)
    return f"{inspect.getsourcefile(raise_in_the_hook)}:{start + offset}"
