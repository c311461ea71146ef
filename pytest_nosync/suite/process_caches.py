"""Caches a pipeline's model classes keep for the whole process, emptied when the census builds a pipeline.

diffusers memoises some per-module work with `functools.lru_cache` on methods (QwenImage's RoPE frequencies:
`QwenEmbedRope._compute_video_freqs`, 128 entries, behind `lru_cache_unless_export`). The cache belongs to the class:
every pipeline a process builds shares it, and its keys hold the module itself. In a census worker, which builds
hundreds of pipelines, the cache keeps every earlier QwenImage transformer alive, and when it is full an entry is
evicted in whichever step a new key arrives: QwenImage Edit's growth read +1,029,120 bytes in one step in one run and
in another step, or none, in the next (two H200s), depending on what the worker had built before. Emptied before a
pipeline's first call, such a cache holds that pipeline's entries only, as in a process that built one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch


def forget(pipe: Any) -> int:
    """Empty the method caches of the classes of `pipe`'s models and their modules; the number emptied."""
    emptied = 0
    for cache in _caches(_classes(pipe)):
        cache.cache_clear()
        emptied += 1
    return emptied


def _classes(pipe: Any) -> set[type]:
    found: set[type] = set()
    for value in vars(pipe).values():
        if isinstance(value, torch.nn.Module):
            found.update(type(module) for module in value.modules())
    return {cls for kind in found for cls in kind.__mro__ if cls.__module__.split(".")[0] not in ("torch", "builtins")}


def _caches(classes: set[type]) -> Iterator[Any]:
    seen: set[int] = set()
    for cls in classes:
        for value in vars(cls).values():
            cache = _lru_cache_of(value)
            if cache is not None and id(cache) not in seen:
                seen.add(id(cache))
                yield cache


def _lru_cache_of(value: Any) -> Any:
    """The lru_cache behind a class attribute: the attribute itself, or one a wrapper closes over (diffusers'
    `lru_cache_unless_export` calls the cache unless torch is compiling or exporting)."""
    if _is_lru_cache(value):
        return value
    for cell in getattr(value, "__closure__", None) or ():
        try:
            inner = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if _is_lru_cache(inner):
            return inner
    return None


def _is_lru_cache(value: Any) -> bool:
    return callable(getattr(value, "cache_clear", None)) and callable(getattr(value, "cache_info", None))
