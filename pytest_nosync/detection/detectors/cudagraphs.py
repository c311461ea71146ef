"""Whether the denoiser's steps can be captured in CUDA graphs: what sync-free steps are for.

The denoiser's forward is compiled with `mode="reduce-overhead"` (inductor with CUDA graph trees) for the guarded
block; every time inductor decides to run a compiled graph without a CUDA graph it says why, through one function
(`log_cudagraph_skip_and_bump_counter`: mutated inputs, CPU tensors or ops, dynamic shapes, an unsupported op...),
which this detector wraps in each inductor module that calls it. An unexpected re-recording (a static input's data
pointer changed between steps, a new shape) is made a skip at once (inductor's re-record limit set to 0 for the
block), so its reason is said too. Each skip is a finding at the source line inductor names (its "Found from" stack),
else at the denoiser's forward. A sync during capture raises inside the call: the pipeline's `error` finding.

Since torch 2.9 inductor partitions a graph (`graph_partition`, on by default) rather than skip it: an op no CUDA graph
can hold — a CPU tensor's op, a copy between devices, an op whose output sizes come from device values — is cut out,
the rest captured in pieces, and the cut-out ops run eagerly between the replays in every step, without a word in the
log. What decides a cut (`Scheduler.should_partition`) is wrapped too: each op it cuts around is a
`cudagraph_partition` finding at the source line of the code that made the op.

Only a GPU has CUDA graphs: under the emulation the check is not checked, with that reason. Inductor compiles for
tens of seconds a pipeline: the check is opt-in (`--nosync-checks=...,cudagraphs`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import re
from typing import Any

import torch

from ...findings import Finding, Frame, Kind
from ...patching import Patches
from ..guard_options import GuardOptions
from .base import CannotCheck, Detector, StepContext, denoiser_finding

HINT = (
    "a step that cannot be captured replays nothing: keep every tensor of the step on the device, mutate no input, "
    "keep shapes and the inputs' storage fixed across steps"
)
_SOURCE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')
_CALLERS = ("torch._inductor.cudagraph_utils", "torch._inductor.compile_fx", "torch._inductor.cudagraph_trees",
            "torch._inductor.output_code")  # fmt: skip
_LOG = "log_cudagraph_skip_and_bump_counter"


class CudaGraphsDetector(Detector):
    name = "cudagraphs"

    def __init__(self, options: GuardOptions) -> None:
        super().__init__(options)
        self._patches = Patches()
        self._config: Any = None
        self.skips: list[tuple[int | None, str]] = []  # (step, inductor's message)
        self.partitions: dict[tuple[str, str], int | None] = {}  # (reason, the op's stack) -> step it was compiled in
        self.calls = 0
        self._forward: Frame | None = None

    def arm(self, ctx: StepContext) -> None:
        super().arm(ctx)
        if self.options.backend != "cuda":
            raise CannotCheck(
                "cudagraphs needs a GPU: CUDA graphs capture device work, which the CPU emulation has none of "
                "(run it with the cuda backend)"
            )
        denoiser = ctx.denoiser
        if not isinstance(denoiser, torch.nn.Module):
            raise CannotCheck(
                f"the cudagraphs check compiles the pipeline's denoiser ({self.options.denoiser!r}), and this guard "
                "has none: guard a pipeline (`nosync.guard(pipe)`)"
            )
        self._forward = _forward_frame(denoiser)
        try:
            self._install(denoiser)
        except BaseException:  # the guard disarms only what armed: nothing of a half-armed check stays on
            self.disarm()
            raise

    def _install(self, denoiser: torch.nn.Module) -> None:
        for name in _CALLERS:
            module = importlib.import_module(name)
            original = getattr(module, _LOG, None)
            if original is not None:
                self._patches.setattr(module, _LOG, self._noting(original))
        from torch._inductor import scheduler  # as torch itself: inductor's import (seconds) where it compiles

        if hasattr(scheduler.Scheduler, "should_partition"):
            self._patches.setattr(scheduler.Scheduler, "should_partition",
                                  self._partition_noting(scheduler.Scheduler.should_partition))  # fmt: skip
        # Inductor's caches would hand back a graph compiled by an earlier run (another process, the same code):
        # nothing would be partitioned, so nothing said. Compiled afresh, every cut is seen. In this process: a pool
        # of compile workers (one process a core, each importing torch) costs more to start than a denoiser's few
        # kernels take to compile.
        self._config = contextlib.ExitStack()
        self._config.enter_context(
            torch._inductor.config.patch(
                {
                    "triton.cudagraph_unexpected_rerecord_limit": 0,
                    "fx_graph_cache": False,
                    "fx_graph_remote_cache": False,
                    "compile_threads": 1,
                }
            )
        )
        self._config.enter_context(torch._functorch.config.patch({"enable_autograd_cache": False}))  # fmt: skip
        torch._dynamo.reset()
        compiled = torch.compile(denoiser.forward, mode="reduce-overhead")

        # its signature readable, as the dynamo detector keeps it (a modular denoise block reads it)
        @functools.wraps(denoiser.forward)
        def forward(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return compiled(*args, **kwargs)

        self._patches.setattr(denoiser, "forward", forward)

    def _noting(self, original: Any) -> Any:
        def noted(msg: str) -> None:
            self.skips.append((self.ctx.current_step, str(msg)))
            original(msg)

        return noted

    def _partition_noting(self, original: Any) -> Any:
        partitions = self.partitions

        def should_partition(scheduler: Any, node: Any) -> str | None:
            reason = original(scheduler, node)
            ir_node = getattr(node, "node", None)
            if reason and ir_node is not None and torch._inductor.config.triton.cudagraphs:  # a fused node: its parts
                stack = next((o.meta["stack_trace"] for o in sorted(getattr(ir_node, "origins", ()), key=str)
                              if o.meta.get("stack_trace")), "")  # fmt: skip
                partitions.setdefault((reason, stack), self.ctx.current_step)  # asked again for every pass
            return reason

        return should_partition

    def disarm(self) -> None:
        try:
            try:
                self._patches.undo()
            finally:
                if self._config is not None:
                    config, self._config = self._config, None
                    config.close()
        finally:
            torch._dynamo.reset()  # no compiled code, graphs or cache entries left behind for later tests
            from torch._inductor import cudagraph_trees  # inductor's, as in _install: only where it compiled

            cudagraph_trees.reset_cudagraph_trees()

    def findings(self) -> list[Finding]:
        out = []
        for step, message in self.skips:
            out.append(denoiser_finding(Kind.CUDAGRAPH_SKIP, self._frames(message), step, HINT, message, self.name))
        for (reason, stack), step in self.partitions.items():
            message = f"the step's graph is partitioned around {reason}: they run outside the CUDA graphs every step"
            out.append(denoiser_finding(Kind.CUDAGRAPH_PARTITION, self._frames(stack), step, HINT, message, self.name))
        return out

    def _frames(self, text: str) -> list[Frame]:
        """The source lines a traceback-like text names (inductor's "Found from", an op's stack), innermost first;
        else the denoiser's forward."""
        found = [Frame(file, int(line), "") for file, line in reversed(_SOURCE.findall(text))]
        return found or ([self._forward] if self._forward is not None else [])

    def unchecked(self) -> str | None:
        if not self.calls and self._forward is not None:
            return "the denoiser was not called in the guarded block: no step could be captured or judged"
        return None


def _forward_frame(module: torch.nn.Module) -> Frame | None:
    try:
        forward = type(module).forward
        return Frame(inspect.getsourcefile(forward) or "", inspect.getsourcelines(forward)[1], "forward")
    except (OSError, TypeError):
        return None


def detectors(options: GuardOptions) -> list[Detector]:
    return [CudaGraphsDetector(options)]
