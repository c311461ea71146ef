"""The option table read through pytest: its rows (pytest_nosync.option_table) become the command-line flags, the ini
keys and the `nosync` marker's arguments.

A run's values are read once into Settings (the run's choices), and resolved per test into one GuardOptions: the
command line wins, then the test's marker, then the ini file, then GuardOptions' own default. Bad values are
usage errors that name the option. Adding an option is one row of the table (see its recipes).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any

import pytest

from ..option_table import GUARD_ROWS, MARKER_ROWS, ROWS, TABLE, Option, OptionError, Settings
from ..profiling.config import DEFAULT_DIR, ProfilerOptions, TraceBudgets, TraceConfig

if TYPE_CHECKING:
    from ..detection.guard_options import GuardOptions

# What this module and the option table import is all the plugin loads in a run without --nosync (the options and
# the marker's help registered): light modules only.

MISSING: Any = object()

_SETTINGS_FIELDS = {f.name for f in fields(Settings)}


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("nosync", "pytest-nosync: no CPU-GPU syncs in diffusion pipelines")
    for row in TABLE:
        dest = row.ini_key
        if row.cli is not None:
            action = {"bool": "store_true", "list": "append"}.get(row.kind, "store")
            extra = {} if row.kind == "bool" else {"metavar": "VALUE"}
            if row.kind == "optional":  # the flag alone means its default value: "" to the row's parser
                extra.update(nargs="?", const="")
            help_text = row.help.replace("%", "%%")  # argparse formats help with %
            group.addoption(row.cli, action=action, default=None, dest=dest, help=help_text, **extra)
        if row.ini:
            ini_type = {"bool": "bool", "list": "linelist"}.get(row.kind, "string")
            parser.addini(dest, help=row.help, type=ini_type, default=[] if row.kind == "list" else None)


def _given(config: pytest.Config, row: Option) -> tuple[Any, Any]:
    """(command-line value, ini value) of a row, MISSING where not given."""
    cli = config.getoption(row.ini_key, default=None) if row.cli is not None else None
    ini = config.getini(row.ini_key) if row.ini else None
    if row.kind == "bool":
        ini = MISSING if ini in (None, False) else ini  # an ini switch only counts when set
    return (MISSING if cli is None else cli), (MISSING if ini in (None, "", []) else ini)


def read(config: pytest.Config) -> Settings:
    """Read and validate the options; bad values are usage errors naming the option."""
    try:
        return _read(config)
    except OptionError as exc:
        raise pytest.UsageError(str(exc)) from None


def _read(config: pytest.Config) -> Settings:
    values: dict[str, Any] = {}
    guard_cli: dict[str, Any] = {}
    guard_ini: dict[str, Any] = {}
    for row in TABLE:
        cli, ini = _given(config, row)
        if row.guard:
            if cli is not MISSING:
                guard_cli[row.name] = row.read(cli, row.cli or row.name)
            if ini is not MISSING:
                guard_ini[row.name] = row.read(ini, f"ini {row.ini_key}")
            continue
        if cli is not MISSING:
            values[row.name] = row.read(cli, row.cli or row.name)
        elif ini is not MISSING:
            values[row.name] = row.read(ini, f"ini {row.ini_key}")
            if row.path and values[row.name] != "none":
                values[row.name] = _ini_relative(config, values[row.name])
    trace = _trace(values, guard_cli.get("trace_budgets") or guard_ini.get("trace_budgets"))
    settings = {k: v for k, v in values.items() if k in _SETTINGS_FIELDS and k != "trace"}
    return Settings(**settings, trace=trace, guard_cli=guard_cli, guard_ini=guard_ini)


def _ini_relative(config: pytest.Config, value: str) -> str:
    """A path from the ini file is relative to that file."""
    if os.path.isabs(value):
        return value
    base = config.inipath.parent if config.inipath else config.rootpath
    return str(base / value)


_PROFILER_ROWS = {"record_shapes": "trace_shapes", "profile_memory": "trace_memory", "with_stack": "trace_stack",
                  "with_flops": "trace_flops", "schedule": "trace_schedule"}  # fmt: skip


def _trace(values: dict[str, Any], run_budgets: TraceBudgets | None) -> TraceConfig:
    """The trace rows (trace, trace_*, nsys) as Settings.trace; what is not given keeps TraceConfig's defaults."""
    mode, nsys = values.get("trace"), values.get("nsys", False)
    if nsys and mode == "always":
        raise OptionError("--nosync-nsys and --nosync-trace always exclude each other: nsys records the trace")
    if nsys and run_budgets is not None and run_budgets.any:
        raise OptionError("--nosync-trace-budget needs torch.profiler's trace, which --nosync-nsys turns off")
    profiler = ProfilerOptions(**{name: values[row] for name, row in _PROFILER_ROWS.items() if row in values})
    return TraceConfig(
        mode=mode or ("never" if nsys else "on-failure"),
        directory=values.get("trace_dir") or DEFAULT_DIR,
        gzip=values.get("trace_gzip", False),
        profiler=profiler,
        nsys=nsys,
    )


# ---- the marker ------------------------------------------------------------------------------------------------
MARKER_HELP = (
    "nosync(" + ", ".join(MARKER_ROWS) + "): guard the test body (or the `nosync` fixture's blocks); "
    "active with --nosync. " + "; ".join(f"{name}: {row.help}" for name, row in MARKER_ROWS.items())
)
GPU_MARKER_HELP = "gpu: needs a CUDA device, or --nosync with the CPU emulation backend"
# pytest-xdist's, which the suite's tests carry (a target's tests share a worker and its built pipeline): registered
# here only without xdist, so that a run without it warns of no unknown marker.
XDIST_GROUP_HELP = "xdist_group(name): pytest-xdist's, for --dist loadgroup (registered by pytest-nosync without xdist)"


def parse_marker(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The `@pytest.mark.nosync(...)` arguments, validated and typed. Raises OptionError naming the bad one."""
    if args:
        raise OptionError(
            f"nosync marker takes keyword arguments only ({', '.join(MARKER_ROWS)}), got positional {args!r}"
        )
    unknown = [k for k in kwargs if k not in MARKER_ROWS]
    if unknown:
        raise OptionError(f"nosync marker: unknown argument {unknown[0]!r}; expected one of {', '.join(MARKER_ROWS)}")
    return {name: MARKER_ROWS[name].read(value, f"nosync marker: {name!r}") for name, value in kwargs.items()}


def resolve(settings: Settings, marker: Mapping[str, Any], **fixed: Any) -> GuardOptions:
    """One test's GuardOptions: command line, then marker, then ini file, then GuardOptions' defaults; `fixed`
    (backend, trace, known, denoiser, ...) is what the plugin itself decides."""
    values: dict[str, Any] = {}
    for row in GUARD_ROWS:
        cli, mark, ini = (src.get(row.name, MISSING) for src in (settings.guard_cli, marker, settings.guard_ini))
        run = cli if cli is not MISSING else ini
        if row.merge is not None and mark is not MISSING and run is not MISSING:
            values[row.name] = row.merge(run, mark)
        elif cli is not MISSING:
            values[row.name] = cli
        elif mark is not MISSING:
            values[row.name] = mark
        elif ini is not MISSING:
            values[row.name] = ini
    from ..detection.guard_options import GuardOptions  # plugin cheap when off: only a checking run resolves a test's

    return GuardOptions(**{**values, **fixed})


def checking(config: pytest.Config) -> bool:
    """Whether this run checks: --nosync, or `nosync = true` in the ini file."""
    cli, ini = _given(config, ROWS["enabled"])
    return cli is not MISSING or ini is not MISSING


def given_flags(config: pytest.Config) -> list[str]:
    """The nosync options given on the command line, --nosync itself aside."""
    return [
        row.cli
        for row in TABLE
        if row.cli is not None and row.name != "enabled" and config.getoption(row.ini_key, default=None) is not None
    ]
