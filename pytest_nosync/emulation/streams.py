"""Streams and events of the emulated device, for code written against `torch.cuda` (under the CUDA mapping) and for
code that asks torch for the device's own module (`torch.get_device_module("emu")`, as diffusers' group offloading
does to prefetch on a stream). Work is done when an op returns, so one in-order stream is exact for what the emulation
judges; a `synchronize()` still waits for the device on a GPU: it calls its namespace's `synchronize`, which the
explicit-sync detector wraps inside a guarded step (a `device_sync` at the caller's line)."""

from __future__ import annotations

import time
from typing import Any

import torch

from . import tensor


class Event:
    """An event: always complete. `synchronize()` still waits on a GPU, and is a finding inside a guarded step."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self.enable_timing = enable_timing
        self._time: float | None = None

    def record(self, stream: Any = None) -> None:
        self._time = time.perf_counter()

    def wait(self, stream: Any = None) -> None:
        pass

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end_event: Event) -> float:
        if self._time is None or end_event._time is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time - self._time) * 1e3


class Stream:
    """One in-order stream of the emulated device. `namespace`: the `torch.<namespace>` whose `synchronize` a
    stream's own `synchronize()` is, as on a GPU (a subclass per namespace)."""

    namespace = ""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.priority = priority

    @property
    def device(self) -> torch.device:
        return tensor._DEVICE  # read when asked: the device module's stream exists before the device is bound

    def synchronize(self) -> None:
        getattr(torch, self.namespace).synchronize()  # waits for the device, as a GPU stream's does (and is seen so)

    def wait_stream(self, stream: Any) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        pass

    def record_event(self, event: Event | None = None) -> Event:
        event = event or Event()
        event.record(self)
        return event

    def query(self) -> bool:
        return True

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None
