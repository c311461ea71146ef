"""The census empties the method caches a pipeline's model classes keep for the process before the pipeline's first
call: a cache shared by every pipeline of a process kept the earlier ones alive, and evicted in whichever step."""

from __future__ import annotations

import functools
import gc
import weakref

import torch

from pytest_nosync.suite import process_caches
from pytest_nosync.suite.targets.base import CallContext
from pytest_nosync.suite.targets.registry import TARGETS, build_pipeline


def _unless_compiling(fn):
    """The shape of diffusers' `lru_cache_unless_export`: a wrapper that closes over the cache."""
    cached = functools.lru_cache(maxsize=2)(fn)

    @functools.wraps(fn)
    def inner(*args, **kwargs):
        return cached(*args, **kwargs)

    return inner


class Rope(torch.nn.Module):
    @functools.lru_cache(maxsize=2)  # noqa: B019 - the pattern under test: a cache that keeps `self` alive
    def freqs(self, n: int) -> torch.Tensor:
        return torch.ones(n)

    @_unless_compiling
    def wrapped(self, n: int) -> torch.Tensor:
        return torch.ones(n)


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rope = Rope()


class Pipe:
    def __init__(self) -> None:
        self.transformer = Model()


def test_a_pipelines_class_caches_are_emptied_and_free_the_earlier_pipelines_they_held() -> None:
    earlier = Pipe()
    earlier.transformer.rope.freqs(4)
    earlier.transformer.rope.wrapped(4)
    gone = weakref.ref(earlier.transformer.rope)
    del earlier
    gc.collect()
    assert gone() is not None  # the bug twin: the class's caches keep an earlier pipeline's module alive
    assert process_caches.forget(Pipe()) == 2
    gc.collect()
    assert gone() is None
    assert Rope.freqs.cache_info().currsize == 0


def test_qwenimages_rope_cache_is_emptied() -> None:
    from diffusers.models.transformers.transformer_qwenimage import QwenEmbedRope

    qwen = TARGETS["qwenimage"]
    pipe = build_pipeline(qwen, "cpu", torch.float32)
    with torch.no_grad():
        pipe(**qwen.call_kwargs(pipe, CallContext(torch.device("cpu"), torch.float32, steps=1)))
    cache = process_caches._lru_cache_of(vars(QwenEmbedRope)["_compute_video_freqs"])
    assert cache is not None and cache.cache_info().currsize > 0
    assert process_caches.forget(pipe) >= 1
    assert cache.cache_info().currsize == 0
