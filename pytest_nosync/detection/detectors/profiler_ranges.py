"""Named ranges for steps and regions: profiler ranges (record_function) and NVTX ranges, plus the
cudaProfilerStart/Stop window for `nsys profile --capture-range=cudaProfilerApi`.

Each keeps its own account of what it opened, so closing everything (the guard exits, also when the block
raised) leaves the profiler's and NVTX's stacks as they were.
"""

from __future__ import annotations

from typing import Any

import torch


class ProfilerRanges:
    """record_function ranges (they show as user_annotation slices in the trace)."""

    def __init__(self) -> None:
        self._open: list[tuple[str, Any]] = []

    def push(self, name: str) -> None:
        handle = torch.autograd.profiler.record_function(name)
        handle.__enter__()
        self._open.append((name, handle))

    def pop(self, name: str) -> None:
        """Close the latest range of that name; record_function ranges are independent, so no other moves."""
        for i in range(len(self._open) - 1, -1, -1):
            if self._open[i][0] == name:
                _, handle = self._open.pop(i)
                handle.__exit__(None, None, None)
                return

    def close_all(self) -> None:
        while self._open:
            self.pop(self._open[-1][0])


class NvtxRanges:
    """NVTX push/pop ranges. NVTX keeps one stack per thread: a range closed out of order (an exception left a
    region open) pops the ones above it and pushes them again, so the stack stays balanced."""

    def __init__(self, nvtx: Any = None) -> None:
        self.nvtx = nvtx if nvtx is not None else torch.cuda.nvtx
        self.stack: list[str] = []

    def push(self, name: str) -> None:
        self.nvtx.range_push(name)
        self.stack.append(name)

    def pop(self, name: str) -> None:
        if name not in self.stack:
            return
        above: list[str] = []
        while self.stack[-1] != name:
            above.append(self.stack.pop())
            self.nvtx.range_pop()
        self.stack.pop()
        self.nvtx.range_pop()
        for again in reversed(above):
            self.push(again)

    def close_all(self) -> None:
        while self.stack:
            self.pop(self.stack[-1])


class CaptureWindow:
    """cudaProfilerStart when step `first` begins, cudaProfilerStop when step `last` ends (or at close, when
    `last` is None or was never reached): with `nsys profile --capture-range=cudaProfilerApi` nsys records
    exactly those steps."""

    def __init__(self, first: int = 0, last: int | None = None, cudart: Any = None) -> None:
        self.first = first
        self.last = last
        self._cudart = cudart
        self.started = False
        self.stopped = False

    @property
    def cudart(self) -> Any:
        if self._cudart is None:
            self._cudart = torch.cuda.cudart()
        return self._cudart

    def on_step_begin(self, step: int) -> None:
        if not self.started and step >= self.first and (self.last is None or step <= self.last):
            _check(self.cudart.cudaProfilerStart(), "cudaProfilerStart")
            self.started = True

    def on_step_end(self, step: int) -> None:
        if self.last is not None and step >= self.last:
            self.close()

    def close(self) -> None:
        if self.started and not self.stopped:
            self.stopped = True
            _check(self.cudart.cudaProfilerStop(), "cudaProfilerStop")


def _check(code: Any, call: str) -> None:
    if code is not None and int(code) != 0:
        raise RuntimeError(f"{call} failed with CUDA error {int(code)}")
