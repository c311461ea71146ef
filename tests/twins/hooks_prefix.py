"""Bug twin of the cached hook registries: look the child registries up by walking the tree every time.

Before the fix, setting a cache context walked `named_modules()` of the whole denoiser on every enter and
exit of `cache_context`. This function does that walk, in place of the cached lookup.
"""

from __future__ import annotations

import inspect


def walking_child_registries(self):
    from diffusers.hooks.hooks import unwrap_module

    registries = []
    for name, module in unwrap_module(self._module_ref).named_modules():  # twin: walk per cache_context
        if name and hasattr(unwrap_module(module), "_diffusers_hook"):
            registries.append(unwrap_module(module)._diffusers_hook)
    return registries


def walk_line() -> str:
    lines, start = inspect.getsourcelines(walking_child_registries)
    offset = next(i for i, line in enumerate(lines) if "# twin:" in line)
    return f"{inspect.getsourcefile(walking_child_registries)}:{start + offset}"
