"""Recompilations between steps of a compiled run.

The denoiser's forward is compiled with a counting eager backend (dynamo's guards and recompiles happen
before any backend, so inductor's compile time is not paid). After the first step ends, the stance
becomes `fail_on_recompile`: a recompile in a later step raises there, and the guard turns the error into
a finding that names the guard that failed and the user line it came from.
"""

from __future__ import annotations

import re
from typing import Any

import torch

from ..findings import Frame
from ..patching import Patches
from .base import Detector

HINT = (
    "a recompile between steps: a Python value that changes per step (a float timestep, a step index, a "
    "shape) is baked into the graph; pass it as a tensor or mark it dynamic"
)
_USER_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
_HEADER = re.compile(r"filename: '(?P<file>[^']+)', function name: '(?P<func>[^']+)', line number: (?P<line>\d+)")
_GUARD = re.compile(r"^\s*-\s*\d+/\d+:\s*(?P<guard>.+?)(\s+#.*)?$", re.MULTILINE)


class RecompileDetector(Detector):
    name = "recompiles"

    def __init__(self) -> None:
        self._patches = Patches()
        self._stance: Any = None
        self.compiles: list[int | None] = []

    def arm(self, guard: Any) -> None:
        super().arm(guard)
        torch._dynamo.reset()
        denoiser = getattr(guard.pipeline, guard.denoiser, None) if guard.pipeline is not None else None
        if denoiser is None:
            raise ValueError("the recompiles check needs a pipeline with a denoiser to compile")

        def counting_backend(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
            self.compiles.append(guard.current_step)
            return gm.forward

        compiled = torch.compile(denoiser.forward, backend=counting_backend)
        self._patches.setattr(denoiser, "forward", compiled)

    def on_step_end(self, step: int) -> None:
        if self._stance is None:
            self._stance = torch.compiler.set_stance("fail_on_recompile")

    def disarm(self) -> None:
        try:
            if self._stance is not None:
                self._stance.__exit__(None, None, None)
                self._stance = None
            self._patches.undo()
        finally:
            torch._dynamo.reset()

    def absorb_exception(self, exc: BaseException) -> bool:
        message = str(exc)
        if "Detected recompile" not in message:
            return False
        frames = [Frame(m["file"], int(m["line"]), m["func"]) for m in _USER_FRAME.finditer(message)]
        frames.reverse()  # innermost first
        header = _HEADER.search(message)
        if header:
            frames.append(Frame(header["file"], int(header["line"]), header["func"]))
        guard_failure = _GUARD.search(message)
        self.guard.record(
            "recompile",
            frames,
            hint=HINT,
            detail=f"recompile: {guard_failure['guard'] if guard_failure else 'guard failure'}",
            source=self.name,
        )
        return True

    def metrics(self) -> dict[str, Any]:
        per_step: dict[str, int] = {}
        for step in self.compiles:
            key = str(step) if step is not None else "before_steps"
            per_step[key] = per_step.get(key, 0) + 1
        return {"compiles_per_step": per_step}
