"""Command-line options and ini keys, read once into Settings. CLI wins over ini."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import pytest

from ..devices import BACKENDS
from ..profiling.budgets import parse_budgets
from ..profiling.config import DEFAULT_DIR, TRACE_MODES, ProfilerOptions, TraceConfig, parse_schedule

# (cli flag, ini key, ini type, default, help) — options whose value can also live in pyproject/pytest.ini
_OPTIONS: tuple[tuple[str, str, str, Any, str], ...] = (
    ("--nosync", "nosync", "bool", False, "turn the nosync checks on (off: marked tests run as plain tests)"),
    (
        "--nosync-mode",
        "nosync_mode",
        "string",
        None,
        "warn: collect every sync and fail once with all of them (default); "
        "error: fail fast at the first sync inside a step (the raise lands on the offending line, for --pdb)",
    ),
    (
        "--nosync-backend",
        "nosync_backend",
        "string",
        "auto",
        "cuda, emulate (CPU emulation) or auto (cuda when a GPU is visible)",
    ),
    (
        "--nosync-profile",
        "nosync_profile",
        "bool",
        False,
        "also run each guarded block under torch.profiler to confirm syncs (slower)",
    ),
    ("--nosync-report", "nosync_report", "string", None, "write one JSON report of the run to this path"),
    (
        "--nosync-suite",
        "nosync_suite",
        "bool",
        False,
        "add the built-in target suite to the session (e.g. from a diffusers checkout: pytest -m gpu --nosync "
        "--nosync-suite); without other paths, run only the suite",
    ),
    ("--nosync-targets", "nosync_targets", "string", None, "comma-separated targets of the suite (default: all)"),
    ("--nosync-steps", "nosync_steps", "string", "2", "denoising steps of each measured call (at least 2)"),
    (
        "--nosync-dtype",
        "nosync_dtype",
        "string",
        None,
        "dtype of the suite's pipelines: bfloat16, float16 or float32 (default: bfloat16 on CUDA, float32 emulated)",
    ),
    ("--nosync-device", "nosync_device", "string", None, "device of the suite's pipelines (default: the backend's)"),
    (
        "--nosync-baseline",
        "nosync_baseline",
        "string",
        None,
        "known-issues baseline (JSON): matching findings are reported as known, not failures; an entry that no "
        "longer matches fails the run",
    ),
    (
        "--nosync-baseline-write",
        "nosync_baseline_write",
        "string",
        None,
        "write the run's failing and known findings to this path as a new baseline",
    ),
    (
        "--nosync-trace",
        "nosync_trace",
        "string",
        None,
        "keep a torch.profiler trace of each guarded block: always, on-failure (default: every guarded block is "
        "profiled, the trace is written only when the test fails) or never",
    ),
    ("--nosync-trace-dir", "nosync_trace_dir", "string", DEFAULT_DIR, "directory of the trace files (one per test id)"),
    ("--nosync-trace-gzip", "nosync_trace_gzip", "bool", False, "write traces as .json.gz"),
    ("--nosync-trace-shapes", "nosync_trace_shapes", "bool", False, "profiler: record input shapes (slower)"),
    ("--nosync-trace-memory", "nosync_trace_memory", "bool", False, "profiler: record allocations (slower)"),
    ("--nosync-trace-stack", "nosync_trace_stack", "bool", False, "profiler: record Python stacks (slower)"),
    ("--nosync-trace-flops", "nosync_trace_flops", "bool", False, "profiler: estimate FLOPs (slower)"),
    (
        "--nosync-trace-schedule",
        "nosync_trace_schedule",
        "string",
        None,
        "WAIT,WARMUP,ACTIVE in denoising steps: record only the ACTIVE steps after WAIT+WARMUP (torch.profiler "
        "schedule; the work before step 0 counts with step 0)",
    ),
    (
        "--nosync-nsys",
        "nosync_nsys",
        "bool",
        False,
        "for `nsys profile --capture-range=cudaProfilerApi`: NVTX ranges per step and region, cudaProfilerStart/Stop "
        "around the measured steps, and no torch.profiler",
    ),
)
_DTYPES = {"bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16", "fp16": "float16", "float32": "float32"}


@dataclass(frozen=True)
class Settings:
    enabled: bool = False
    mode: str | None = None  # None: the marker's mode, else warn
    backend: str = "auto"
    profile: bool = False
    report: str | None = None
    suite: bool = False
    targets: tuple[str, ...] = ()
    steps: int = 2
    dtype: str | None = None
    device: str | None = None
    checkpoints: dict[str, str] = field(default_factory=dict)
    baseline: str | None = None
    baseline_write: str | None = None
    trace: TraceConfig = field(default_factory=TraceConfig)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("nosync", "pytest-nosync: no CPU-GPU syncs in diffusion pipelines")
    for flag, ini, kind, default, help_text in _OPTIONS:
        if kind == "bool":
            group.addoption(flag, action="store_true", default=None, dest=ini, help=help_text)
        else:
            group.addoption(flag, action="store", default=None, dest=ini, metavar="VALUE", help=help_text)
        parser.addini(ini, help=help_text, type=kind if kind == "bool" else "string", default=default)
    group.addoption(
        "--nosync-share-gpus",
        action="store_true",
        default=False,
        dest="nosync_share_gpus",
        help="with pytest-xdist, let several workers share a GPU (default: one worker per GPU, more is an error)",
    )
    checkpoint_help = (
        "NAME=PATH: run target NAME from a local checkpoint (a directory or an id in the local HF cache; "
        "safetensors only, no remote code); repeatable"
    )
    group.addoption(
        "--nosync-checkpoint",
        action="append",
        default=None,
        dest="nosync_checkpoint",
        metavar="NAME=PATH",
        help=checkpoint_help,
    )
    parser.addini("nosync_checkpoint", help=checkpoint_help, type="linelist", default=[])
    budget_help = (
        "NAME=VALUE: a budget on the trace's figures, checked in steady-state steps: max_gpu_idle_fraction, "
        "max_cpu_ms_between_denoiser_calls, max_layout_transforms_per_step, max_copies_per_step; repeatable "
        "(the marker's trace_budgets override them per test)"
    )
    group.addoption(
        "--nosync-trace-budget",
        action="append",
        default=None,
        dest="nosync_trace_budgets",
        metavar="NAME=VALUE",
        help=budget_help,
    )
    parser.addini("nosync_trace_budgets", help=budget_help, type="linelist", default=[])


def _value(config: pytest.Config, name: str) -> Any:
    value = config.getoption(name)
    if value is None:
        value = config.getini(name)
    return value if value != "" else None


def _ini_relative(config: pytest.Config, name: str) -> str | None:
    """A path option: from the command line as given, from the ini file relative to that file."""
    given = config.getoption(name)
    if given:
        return given
    value = config.getini(name) or None
    if value and not os.path.isabs(value):
        base = config.inipath.parent if config.inipath else config.rootpath
        value = str(base / value)
    return value


def read(config: pytest.Config) -> Settings:
    """Read and validate the options; bad values are usage errors naming the option."""
    mode = _value(config, "nosync_mode")
    if mode not in (None, "warn", "error"):
        raise pytest.UsageError(f"--nosync-mode must be 'warn' or 'error', got {mode!r}")
    backend = _value(config, "nosync_backend") or "auto"
    if backend not in BACKENDS:
        raise pytest.UsageError(f"--nosync-backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    steps_raw = _value(config, "nosync_steps") or "2"
    if not str(steps_raw).isdigit() or int(steps_raw) < 2:
        raise pytest.UsageError(f"--nosync-steps must be a whole number >= 2, got {steps_raw!r}")
    dtype = _value(config, "nosync_dtype")
    if dtype is not None and dtype not in _DTYPES:
        raise pytest.UsageError(f"--nosync-dtype must be one of bfloat16, float16, float32, got {dtype!r}")
    targets_raw = _value(config, "nosync_targets") or ""
    targets = tuple(t.strip() for t in targets_raw.split(",") if t.strip())
    checkpoints: dict[str, str] = {}
    for entry in _value(config, "nosync_checkpoint") or []:
        name, sep, path = entry.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise pytest.UsageError(f"--nosync-checkpoint takes NAME=PATH (e.g. wan=/models/wan), got {entry!r}")
        checkpoints[name.strip()] = path.strip()
    return Settings(
        trace=_trace(config),
        enabled=bool(_value(config, "nosync")),
        mode=mode,
        backend=backend,
        profile=bool(_value(config, "nosync_profile")),
        report=_value(config, "nosync_report"),
        suite=bool(_value(config, "nosync_suite")),
        targets=targets,
        steps=int(steps_raw),
        dtype=_DTYPES[dtype] if dtype else None,
        device=_value(config, "nosync_device"),
        checkpoints=checkpoints,
        baseline=_ini_relative(config, "nosync_baseline"),
        baseline_write=_value(config, "nosync_baseline_write"),
    )


def _trace(config: pytest.Config) -> TraceConfig:
    mode = _value(config, "nosync_trace")
    if mode is not None and mode not in TRACE_MODES:
        raise pytest.UsageError(f"--nosync-trace must be one of {', '.join(TRACE_MODES)}, got {mode!r}")
    nsys = bool(_value(config, "nosync_nsys"))
    if nsys and mode == "always":
        raise pytest.UsageError("--nosync-nsys and --nosync-trace always exclude each other: nsys records the trace")
    schedule_raw = _value(config, "nosync_trace_schedule")
    try:
        schedule = parse_schedule(schedule_raw) if schedule_raw else None
    except ValueError as exc:
        raise pytest.UsageError(f"--nosync-trace-schedule: {exc}") from None
    try:
        budgets = parse_budgets(_value(config, "nosync_trace_budgets") or [], source="--nosync-trace-budget")
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    if nsys and budgets.any:
        raise pytest.UsageError("--nosync-trace-budget needs torch.profiler's trace, which --nosync-nsys turns off")
    options = ProfilerOptions(
        record_shapes=bool(_value(config, "nosync_trace_shapes")),
        profile_memory=bool(_value(config, "nosync_trace_memory")),
        with_stack=bool(_value(config, "nosync_trace_stack")),
        with_flops=bool(_value(config, "nosync_trace_flops")),
        schedule=schedule,
    )
    return TraceConfig(
        mode=mode or ("never" if nsys else "on-failure"),
        directory=_value(config, "nosync_trace_dir") or DEFAULT_DIR,
        gzip=bool(_value(config, "nosync_trace_gzip")),
        profiler=options,
        nsys=nsys,
        budgets=budgets,
    )


SETTINGS = pytest.StashKey[Settings]()


def of(config: pytest.Config) -> Settings:
    """The run's settings (defaults when the plugin was not configured, e.g. in a bare pytester run)."""
    return config.stash.get(SETTINGS, Settings())
