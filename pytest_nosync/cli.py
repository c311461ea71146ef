"""`python -m pytest_nosync profile|diagnose|compare|baseline|options|census`: profile one call of a target pipeline,
diagnose a trace file, compare two runs' reports, migrate a known-issues baseline, print the options' reference.

    python -m pytest_nosync profile --target wan --mode compile --steps 2 --device cuda --out wan.json
    python -m pytest_nosync diagnose wan.json

`profile` builds the target's pipeline (pytest_nosync.suite.targets.registry: tiny random weights, or --checkpoint),
makes `--warmup` unprofiled calls (compile mode compiles the denoiser there), then profiles one call under a
guard that marks its steps and regions, prints the diagnosis and writes the trace. Exit status 1 when a
`--budget` is exceeded, 4 for a usage error (one line: a bad argument, a file that cannot be read or written).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from .census.outputs import DEFAULT, OUTPUTS
from .cli_errors import UsageError
from .cli_errors import check_writable as _check_writable
from .cli_errors import unreadable as _unreadable
from .cli_errors import write as _write
from .findings import Report
from .profiling.config import NAMES as BUDGET_NAMES
from .profiling.config import ProfilerOptions, TraceConfig, parse_budgets, parse_schedule
from .profiling.diagnose import TraceDiagnosis, diagnose
from .profiling.render import render_diagnosis
from .profiling.trace import Trace

if TYPE_CHECKING:
    import torch  # imported by `profile` only: the other commands answer without it

USAGE_ERROR = 4  # pytest's status for a usage error: the command line and the plugin answer alike
Build = Callable[..., Any]  # build_pipeline(target, device, dtype, checkpoint=None)
_DTYPES = ("bfloat16", "float16", "float32")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m pytest_nosync", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("profile", help="profile one call of a target pipeline and diagnose its trace")
    p.add_argument("--target", required=True, help="a target of pytest_nosync.suite.targets.registry (e.g. wan)")
    p.add_argument("--mode", choices=("eager", "compile"), default="eager", help="compile: torch.compile the denoiser")
    p.add_argument("--backend", default="inductor", help="torch.compile backend in compile mode (default inductor)")
    p.add_argument("--steps", type=int, default=2, help="denoising steps of the profiled call (default 2, at least 2)")
    p.add_argument("--warmup", type=int, default=1, help="unprofiled calls before it (default 1)")
    p.add_argument(
        "--device",
        help="cuda, emu (the CPU emulation of a GPU: syncs are checked as on one) or cpu (nothing to check syncs "
        "on); default: cuda when available, else emu, as pytest's runs",
    )
    p.add_argument("--dtype", choices=_DTYPES, help="default: bfloat16 on cuda, float32 on cpu")
    p.add_argument("--checkpoint", help="a local checkpoint directory or cached repo id instead of the tiny build")
    p.add_argument(
        "--out",
        help="the trace file, or a directory (one that exists, or DIR/) for <target>-<mode>.json; "
        "default: a new private temporary directory, printed",
    )
    p.add_argument("--gzip", action="store_true", help="write .json.gz")
    p.add_argument("--record-shapes", action="store_true")
    p.add_argument("--profile-memory", action="store_true")
    p.add_argument("--with-stack", action="store_true", help="Python stacks: places in the diagnosis")
    p.add_argument("--with-flops", action="store_true")
    p.add_argument("--schedule", metavar="WAIT,WARMUP,ACTIVE", help="record only some steps (torch.profiler schedule)")
    p.add_argument(
        "--nsys",
        action="store_true",
        help="no torch.profiler: NVTX ranges and cudaProfilerStart/Stop for "
        "`nsys profile --capture-range=cudaProfilerApi python -m pytest_nosync profile ... --nsys`",
    )
    p.add_argument(
        "--budget", action="append", default=[], metavar="NAME=VALUE", help=f"one of {', '.join(BUDGET_NAMES)}"
    )
    p.add_argument("--json", dest="json_out", help="also write the diagnosis as JSON here")
    d = commands.add_parser("diagnose", help="diagnose a trace file (Chrome JSON from torch.profiler, .gz too)")
    d.add_argument("trace")
    d.add_argument("--json", dest="json_out", help="also write the diagnosis as JSON here")
    c = commands.add_parser("compare", help="compare two --nosync-report files (e.g. a GPU run and an emulated one)")
    c.add_argument("reference", help="the reference run's report (e.g. the GPU's)")
    c.add_argument("other", help="the run to check against it (e.g. the emulated one)")
    commands.add_parser("options", help="the reference of every option, marker argument and ini key (Markdown)")
    n = commands.add_parser("census", help="a census of diffusers' tester classes: its table, or the diff of two")
    census_commands = n.add_subparsers(dest="census_command", required=True)
    for output in OUTPUTS.values():
        output.arguments(census_commands.add_parser(output.name, help=output.help))
    b = commands.add_parser("baseline", help="known-issues baseline files")
    b.add_argument(
        "action", choices=("migrate",), help="migrate: rewrite schema-1 entries (file:line) by code identity"
    )
    b.add_argument("file", help="the baseline to migrate; run with the diffusers its line numbers were recorded on")
    b.add_argument("--out", help="write here instead of rewriting FILE")
    return parser


def main(
    argv: Sequence[str] | None = None, *, targets: Mapping[str, Any] | None = None, build: Build | None = None
) -> int:
    """The command line. `targets` and `build` default to pytest_nosync.suite.targets.registry's TARGETS and
    build_pipeline (tests pass stand-ins). A usage error (a bad argument, a file that cannot be read or written)
    is one line on stderr and SystemExit(4)."""
    parser = _parser()
    args = parser.parse_args(_census_table_by_default(list(sys.argv[1:] if argv is None else argv)))
    try:
        if args.command == "compare":
            return compare_reports(args.reference, args.other)
        if args.command == "baseline":
            return migrate_baseline(args.file, args.out)
        if args.command == "census":
            return OUTPUTS[args.census_command].run(args)
        if args.command == "options":
            from .plugin.options import reference_markdown

            print(reference_markdown(), end="")
            return 0
        if args.command == "diagnose":
            return diagnose_file(args.trace, args.json_out)
        return profile(args, targets, build)
    except UsageError as exc:
        parser.exit(USAGE_ERROR, f"{parser.prog} {args.command}: {exc}\n")


def _census_table_by_default(argv: list[str]) -> list[str]:
    """`census REPORT...` is `census table REPORT...`: the table came first, and its command line stays."""
    if argv[:1] == ["census"] and len(argv) > 1 and argv[1] not in (*OUTPUTS, "-h", "--help"):
        return ["census", DEFAULT, *argv[1:]]
    return argv


class _Parser(argparse.ArgumentParser):
    """argparse's own errors (an unknown command, a missing argument) as one line and exit status 4, like every
    other usage error here and the plugin's: argparse would print its usage and exit 2, which pytest uses for an
    interrupted run."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"{self.prog}: {message} (see {self.prog} --help)\n")


def compare_reports(reference_path: str, other_path: str) -> int:
    """`compare`: 1 when the other run found what the reference did not."""
    from .compare import NothingInCommon, compare, render
    from .run_report import read

    reports = []
    for path in (reference_path, other_path):
        try:
            reports.append(read(path)[1])
        except (OSError, ValueError) as exc:
            raise _unreadable("the report", path, exc) from None
    try:
        result = compare(*reports)
    except NothingInCommon as exc:
        raise UsageError(f"{reference_path} and {other_path}: {exc}") from None
    print(render(result, ("reference", "other")))
    return 1 if result.only_other or result.failed_only_other else 0


def diagnose_file(path: str, json_out: str | None) -> int:
    """`diagnose`: a trace file's diagnosis, printed and, with --json, written."""
    _check_writable("--json", json_out, "diagnosis.json")
    try:
        trace = Trace.load(path)
    except (OSError, ValueError) as exc:
        raise _unreadable("the trace", path, exc) from None
    diagnosis = diagnose(trace)
    print(render_diagnosis(diagnosis))
    _write_json(json_out, diagnosis)
    return 0


def migrate_baseline(path: str, out: str | None) -> int:
    """`baseline migrate`: schema-1 entries rewritten by code identity, into `out` or in place."""
    from .baseline import Baseline, BaselineError, migrate, write

    try:
        known = Baseline.load(path)
    except BaselineError as exc:
        raise UsageError(str(exc)) from None
    option = "--out" if out else ""  # without --out, FILE is rewritten
    _check_writable(option, out or path, "baseline.json")
    entries, said = migrate(known)
    for line in said:
        print(line)
    _write(option, out or path, lambda: write(out or path, entries))
    print(f"wrote {len(entries)} entries to {out or path}")
    return 0


def _registry(targets: Mapping[str, Any] | None, build: Build | None) -> tuple[Mapping[str, Any], Build]:
    if targets is not None and build is not None:
        return targets, build
    try:
        from .suite.targets import registry
    except ImportError as exc:
        raise UsageError(
            f"the target registry (pytest_nosync.suite.targets.registry) is not available here: {exc}"
        ) from None
    return targets or registry.TARGETS, build or registry.build_pipeline


def profile(args: argparse.Namespace, targets: Mapping[str, Any] | None = None, build: Build | None = None) -> int:
    import torch

    from .emulation import is_emulated
    from .guard_options import GuardOptions
    from .suite.guarded_call import guarded_call
    from .suite.targets.base import CallContext

    targets, build = _registry(targets, build)
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
    pipe = build(target, device, dtype, checkpoint=args.checkpoint)
    if args.mode == "compile":
        compile_denoiser(pipe, target.denoiser, args.backend)

    def kwargs() -> dict[str, Any]:
        return target.call_kwargs(pipe, CallContext(device, dtype, args.steps))

    for _ in range(args.warmup):
        with torch.no_grad():
            pipe(**kwargs())
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    # (no synchronize after the profiled call: stopping the profiler waits for the device itself)
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
    test_id = f"{args.target}-{args.mode}"
    report = guarded_call(
        pipe, kwargs(), options, test_id=test_id, check="syncs" if checks else "trace", target=args.target
    )
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
    from .profiling.export import fresh_private_dir

    try:
        directory = fresh_private_dir("profiles", prefix=f"{args.target}-{args.mode}-")
    except OSError as exc:
        raise UsageError(f"no --out, and no private temporary directory: {exc}") from None
    print(f"outputs: {directory} (a new private temporary directory; --out names another place)")
    return directory


def _check_checkpoint(checkpoint: str | None) -> None:
    if not checkpoint:
        return
    try:
        from .suite.targets.registry import checkpoint_problem
    except ImportError:
        return  # no registry: the stand-in build reads it
    problem = checkpoint_problem(checkpoint)
    if problem:
        raise UsageError(f"--checkpoint {checkpoint}: {problem} (nothing is downloaded)")


def _device(name: str | None) -> torch.device:
    import torch

    from .devices import cuda_available, execution_device

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
    import torch._dynamo

    if backend not in torch._dynamo.list_backends(exclude_tags=()):
        known = sorted({*torch._dynamo.list_backends(), "eager", "aot_eager"})
        raise UsageError(
            f"--backend {backend}: no torch.compile backend of that name here; known: {', '.join(known)} (and the "
            "debugging ones of torch._dynamo.list_backends(exclude_tags=()))"
        )


def compile_denoiser(pipe: Any, denoiser: str, backend: str) -> None:
    """Replace the denoiser by its torch.compile'd wrapper. The guard's hooks then sit on the wrapper, outside
    the compiled region, and add no graph break."""
    import torch

    setattr(pipe, denoiser, torch.compile(getattr(pipe, denoiser), backend=backend))


def _summarise(report: Report, args: argparse.Namespace) -> int:
    from .render import render_report

    diagnosis = report.metrics.get("diagnosis")
    if diagnosis:
        print(render_diagnosis(TraceDiagnosis.from_dict(diagnosis)))
        _write_json(args.json_out, TraceDiagnosis.from_dict(diagnosis))
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


def _write_json(path: str | None, diagnosis: TraceDiagnosis) -> None:
    def write() -> None:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(diagnosis.to_dict(), fh, indent=1)

    if path:
        _write("--json", path, write)
