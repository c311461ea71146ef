"""`python -m pytest_nosync profile`: build a target's pipeline (tiny random weights, or --checkpoint), make `--warmup`
unprofiled calls (compile mode compiles the denoiser there), then profile one call under a guard that marks its steps
and regions, print the diagnosis and write the trace. The pipeline takes the suite's path (suite.pipelines: prepare,
then `call`), so a raise while compiling, in a warm-up call or in the profiled call is the report's `error` finding.
cli.py parses the command line and calls `profile`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
import torch._dynamo

from .cli_errors import UsageError, write_json
from .cli_errors import check_writable as _check_writable
from .detection.devices import cuda_available, execution_device
from .detection.guard_options import GuardOptions
from .emulation import is_emulated
from .findings import Report
from .profiling.config import ProfilerOptions, TraceConfig, parse_budgets, parse_schedule
from .profiling.diagnose import TraceDiagnosis
from .profiling.export import fresh_private_dir
from .profiling.render import render_diagnosis
from .render import render_report
from .suite.pipelines import call, prepare
from .suite.targets import registry
from .suite.targets.base import CallContext

Build = Callable[..., Any]  # build_pipeline(target, device, dtype, checkpoint=None)


def profile(args: argparse.Namespace, targets: Mapping[str, Any] | None = None, build: Build | None = None) -> int:
    """`profile`: one call of the target's pipeline under a guard; `targets` and `build` default to the registry's."""
    if targets is None or build is None:
        targets, build = targets or registry.TARGETS, build or registry.build_pipeline
    if args.target not in targets:
        raise UsageError(f"unknown target {args.target!r}; known: {', '.join(targets)}")
    if args.steps < 2:  # as pytest's --nosync-steps
        raise UsageError(
            f"--steps {args.steps}: the profiled call needs at least 2 denoising steps (the sync check judges what "
            "runs after a step's update in the step after it)"
        )
    if args.warmup < 0:
        raise UsageError(f"--warmup {args.warmup}: must be at least 0")
    try:
        budgets = parse_budgets(args.budget, source="--budget")
        schedule = parse_schedule(args.schedule) if args.schedule else None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.nsys and budgets.any:
        raise UsageError("--budget reads torch.profiler's trace, which --nsys turns off")
    _check_checkpoint(args.checkpoint)
    if args.mode == "compile":
        _check_backend(args.backend)
    device = _device(args.device)  # before any output is made: a bad device leaves nothing behind
    if args.mode == "compile" and is_emulated(device):
        raise UsageError(
            "--mode compile: dynamo cannot compile for the emulated device (it would trace the emulation, not the "
            "model): profile compiled calls on a GPU (--device cuda) or on the plain CPU (--device cpu, where syncs "
            "are not checked)"
        )
    if args.nsys and device.type != "cuda":
        raise UsageError(
            f"--nsys marks CUDA work for nsys (NVTX ranges, cudaProfilerStart/Stop) and the device is {device}: "
            "run it on a GPU, under `nsys profile --capture-range=cudaProfilerApi`"
        )
    out = _named_out(args)
    _check_writable("--out", out, "trace.json")  # before the pipeline is built and run, not after
    _check_writable("--json", args.json_out, "diagnosis.json")
    if not out and not args.nsys:  # (nsys mode writes no trace)
        out = str(_temporary_dir(args) / f"{args.target}-{args.mode}.json")
    target = targets[args.target]
    dtype = getattr(torch, args.dtype) if args.dtype else (torch.bfloat16 if device.type == "cuda" else torch.float32)
    compiled = (lambda pipe: compile_denoiser(pipe, target.denoiser, args.backend)) if args.mode == "compile" else None
    # a raise while building stays the command's (as a checkpoint that does not load); the plain scenario
    prepared = prepare(lambda: build(target, device, dtype, checkpoint=args.checkpoint), None, target.denoiser,
                       device, then=compiled)  # fmt: skip
    config = TraceConfig(
        mode="never" if args.nsys else "always",
        path=out,
        gzip=args.gzip,
        profiler=ProfilerOptions(args.record_shapes, args.profile_memory, args.with_stack, args.with_flops, schedule),
        nsys=args.nsys,
    )
    # The sync check runs wherever syncs exist: on a GPU, and on the emulated one.
    backend = "cuda" if device.type == "cuda" else "emulate" if is_emulated(device) else None
    checks = ("syncs",) if backend else ()
    options = GuardOptions(
        checks=checks, backend=backend or "auto", trace=config, trace_budgets=budgets, denoiser=target.denoiser
    )
    test_id, check = f"{args.target}-{args.mode}", "syncs" if checks else "trace"
    # (no synchronize after the profiled call: stopping the profiler waits for the device itself)
    report = call(prepared, lambda pipe: target.call_kwargs(pipe, CallContext(device, dtype, args.steps)), options,
                  warmup=args.warmup, test_id=test_id, check=check, target=args.target)  # fmt: skip
    if not checks:
        print("syncs: not checked on the plain CPU (--device emu checks them on the CPU emulation of a GPU)")
    return _summarise(report, args)


def _named_out(args: argparse.Namespace) -> str | None:
    """The trace file --out names: the path itself, or <target>-<mode>.json in the directory it names."""
    if not args.out:
        return None
    if os.path.isdir(args.out) or args.out.endswith(("/", os.sep)):
        return os.path.join(args.out, f"{args.target}-{args.mode}.json")
    return args.out


def _temporary_dir(args: argparse.Namespace) -> Path:
    """Without --out, a new directory of the user's under the temporary directory, said before the call (not the
    working directory: a command run anywhere leaves nothing there)."""
    try:
        directory = fresh_private_dir("profiles", prefix=f"{args.target}-{args.mode}-")
    except OSError as exc:
        raise UsageError(f"no --out, and no private temporary directory: {exc}") from None
    print(f"outputs: {directory} (a new private temporary directory; --out names another place)")
    return directory


def _check_checkpoint(checkpoint: str | None) -> None:
    if not checkpoint:
        return
    problem = registry.checkpoint_problem(checkpoint)
    if problem:
        raise UsageError(f"--checkpoint {checkpoint}: {problem} (nothing is downloaded)")


def _device(name: str | None) -> torch.device:
    if name in ("emu", "emulate") or (not name and not cuda_available()):  # the default: what pytest checks with
        return execution_device("emulate")
    if not name:
        return torch.device("cuda")
    try:
        device = torch.device(name)
    except RuntimeError as exc:
        raise UsageError(f"--device {name}: {exc}") from None
    if device.type == "cuda" and not cuda_available():
        raise UsageError(f"--device {name}: no CUDA device here (--device emu checks syncs on the CPU emulation)")
    return device


def _check_backend(backend: str) -> None:
    """A torch.compile backend this torch knows by that name (dynamo raised InvalidBackend at the first call)."""
    if backend not in torch._dynamo.list_backends(exclude_tags=()):
        known = sorted({*torch._dynamo.list_backends(), "eager", "aot_eager"})
        raise UsageError(
            f"--backend {backend}: no torch.compile backend of that name here; known: {', '.join(known)} (and the "
            "debugging ones of torch._dynamo.list_backends(exclude_tags=()))"
        )


def compile_denoiser(pipe: Any, denoiser: str, backend: str) -> None:
    """Replace the denoiser by its torch.compile'd wrapper. The guard's hooks then sit on the wrapper, outside
    the compiled region, and add no graph break."""
    setattr(pipe, denoiser, torch.compile(getattr(pipe, denoiser), backend=backend))


def _summarise(report: Report, args: argparse.Namespace) -> int:
    diagnosis = report.metrics.get("diagnosis")
    if diagnosis:
        print(render_diagnosis(TraceDiagnosis.from_dict(diagnosis)))
        write_json("--json", args.json_out, TraceDiagnosis.from_dict(diagnosis).to_dict())
    if report.artifacts.get("trace"):
        print(f"trace: {report.artifacts['trace']} (open it in Perfetto)")
    if args.nsys:
        print(
            "nsys mode: NVTX ranges per step and region; cudaProfilerStart at the first captured step, "
            "cudaProfilerStop after the last (--schedule) or at the call's end: run this command under "
            "`nsys profile --capture-range=cudaProfilerApi`"
        )
    if report.findings or report.not_checked:  # syncs and budgets, without the diagnosis printed above
        text = render_report(replace(report, metrics={}, artifacts={}))
        print(text, file=sys.stderr if report.passed is False else sys.stdout)
    return 1 if report.passed is False else 0
