"""`python -m pytest_nosync profile|diagnose|compare|baseline|options|census`: profile one call of a target pipeline,
diagnose a trace file, compare two runs' reports, migrate a known-issues baseline, print the options' reference.

    python -m pytest_nosync profile --target wan --mode compile --steps 2 --device cuda --out wan.json
    python -m pytest_nosync diagnose wan.json

`profile` (cli_profile.py) builds the target's pipeline (suite.targets.registry: tiny random weights, or --checkpoint),
makes `--warmup` unprofiled calls (compile mode compiles the denoiser there), then profiles one call under a
guard that marks its steps and regions, prints the diagnosis and writes the trace. Exit status 1 when a
`--budget` is exceeded, 4 for a usage error (one line: a bad argument, a file that cannot be read or written).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from .baseline import Baseline, BaselineError, migrate, write
from .census.outputs import DEFAULT, OUTPUTS
from .cli_errors import UsageError
from .cli_errors import check_writable as _check_writable
from .cli_errors import unreadable as _unreadable
from .cli_errors import write as _write
from .cli_errors import write_json as _write_json
from .compare import NothingInCommon, compare, render
from .option_table import reference_markdown
from .profiling.config import NAMES as BUDGET_NAMES
from .profiling.diagnose import diagnose
from .profiling.render import render_diagnosis
from .profiling.trace import Trace
from .run_report import read

if TYPE_CHECKING:
    from .cli_profile import Build

USAGE_ERROR = 4  # pytest's status for a usage error: the command line and the plugin answer alike
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
            print(reference_markdown(), end="")
            return 0
        if args.command == "diagnose":
            return diagnose_file(args.trace, args.json_out)
        # torch and the suite, seconds of imports: only `profile` pays them, the other commands answer without.
        from .cli_profile import profile

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
    _write_json("--json", json_out, diagnosis.to_dict())
    return 0


def migrate_baseline(path: str, out: str | None) -> int:
    """`baseline migrate`: schema-1 entries rewritten by code identity, into `out` or in place."""
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
