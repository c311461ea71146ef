"""The option table: every pytest-nosync option's name, parser, kind, ini key, marker argument and help, one row
each; the run's choices they fill (Settings); and the reference page generated from the rows (docs/options.md).

Data with no pytest in it: plugin/options builds pytest's flags, ini keys and the `nosync` marker from the rows and
reads a run's values into Settings; `python -m pytest_nosync options` prints the reference page. A row's default is
its field's own (GuardOptions', Settings'): written once. Bad values are OptionErrors that name the option.

Recipes:
  - an option that reaches a detector: one `Option(..., guard=True)` row (add `marker=True` if a test may set
    it) and one GuardOptions field of the same name; the detector reads `self.options.<name>`.
  - a run-wide option: one row (guard=False) and one Settings field of the same name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from .checks import CHECKS, PIPELINE_CHECKS, SUITE_CHECKS, UnknownCheck, lookup
from .findings import BACKENDS, Mode
from .profiling.config import (
    KEEP_BYTES,
    KEEP_TRACES,
    TRACE_MODES,
    TraceBudgets,
    TraceConfig,
    parse_budgets,
    parse_schedule,
)
from .profiling.config import NAMES as BUDGET_NAMES

if TYPE_CHECKING:
    from .step_cost import Tolerance

# The plugin reads this table in every run, with --nosync or without (its rows register the options and the marker's
# help): it imports light modules only. A parser that needs more imports it when it parses.


class OptionError(ValueError):
    """A bad option or marker value; the message names it."""


# ---- parsers: raw value (command-line text, ini text or a marker's Python value) → typed value ----------------
def choice(*values: str) -> Callable[[Any], str]:
    names = [str(v) for v in values]  # an enum's members say their value, not `<Mode.WARN: 'warn'>`
    expected = " or ".join(repr(v) for v in names) if len(names) == 2 else "one of " + ", ".join(names)

    def parse(raw: Any) -> str:
        if raw not in values:
            raise ValueError(f"must be {expected}, got {raw!r}")
        return raw

    return parse


def whole_number(least: int) -> Callable[[Any], int]:
    def parse(raw: Any) -> int:
        text = str(raw)
        if isinstance(raw, bool) or not text.isdigit() or int(text) < least:
            raise ValueError(f"must be a whole number >= {least}, got {raw!r}")
        return int(text)

    return parse


def flag(raw: Any) -> bool:
    """Switches: a command-line switch and an ini bool arrive as bools already; a marker must give one."""
    if not isinstance(raw, bool):
        raise ValueError(f"must be True or False, got {raw!r}")
    return raw


def text(raw: Any) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError(f"must be a non-empty string, got {raw!r}")
    return raw.strip()


def check_names(raw: Any) -> tuple[str, ...]:
    names = (raw,) if isinstance(raw, str) else raw
    if not isinstance(names, (tuple, list)) or not names:
        raise ValueError(f"must be a non-empty list of check names, got {raw!r}")
    try:
        lookup(names)
    except UnknownCheck as exc:
        raise ValueError(f"has an {exc}") from None
    return tuple(names)


def pipeline_checks(raw: Any) -> tuple[str, ...]:
    """Checks the suite and the census run on every pipeline: those they run by default, and the opt-in ones."""
    names = name_list(raw) if isinstance(raw, str) else tuple(raw)
    unknown = [n for n in names if n not in PIPELINE_CHECKS]
    if unknown or not names:
        raise ValueError(f"takes some of {', '.join(PIPELINE_CHECKS)}, got {raw!r}")
    return names


def scenario_list(raw: Any) -> tuple[Any, ...]:
    """`NAME[:KEY=VALUE...][,NAME...]` or `all` (pytest_nosync.scenarios), or a marker's list of the same."""
    from .scenarios import UnknownScenario, parse  # plugin cheap when off: only a scenario asked for loads them

    if not isinstance(raw, (str, list, tuple)):
        raise ValueError(f"must be scenario names (a comma-separated string or a list), got {raw!r}")
    try:
        return parse(raw)
    except UnknownScenario as exc:
        raise ValueError(str(exc)) from None


def allow_list(raw: Any) -> tuple:
    from .policy import parse_allow  # plugin cheap when off: only an allow-list given loads the policy

    if isinstance(raw, (str, dict)) or not isinstance(raw, (tuple, list)):
        raise ValueError(f"must be a list of (pattern, reason) pairs, got {raw!r}")
    return parse_allow(raw, source="entry")


def budgets(raw: Any) -> TraceBudgets:
    if not isinstance(raw, (dict, list, tuple)):
        raise ValueError(f"must be a dict of budget names to limits, got {raw!r}")
    return parse_budgets(raw if isinstance(raw, dict) else list(raw), source="budget")


def workers(raw: Any) -> int | None:
    """`auto` (None: the plugin decides) or a whole number of processes."""
    return None if raw == "auto" else whole_number(0)(raw)


def name_list(raw: Any) -> tuple[str, ...]:
    return tuple(t.strip() for t in str(raw).split(",") if t.strip())


DTYPES = {"bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16", "fp16": "float16", "float32": "float32"}


def dtype_name(raw: Any) -> str:
    if raw not in DTYPES:
        raise ValueError(f"must be one of bfloat16, float16, float32, got {raw!r}")
    return DTYPES[raw]


def device_name(raw: Any) -> str:
    import torch  # plugin cheap when off: only a device given imports torch

    try:
        torch.device(str(raw))
    except (RuntimeError, ValueError):
        raise ValueError(f"must be a torch device such as cuda, cuda:1 or cpu, got {raw!r}") from None
    return str(raw)


def checkpoints(raw: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in raw:
        name, sep, path = str(entry).partition("=")
        if not sep or not name.strip() or not path.strip():
            raise ValueError(f"takes NAME=PATH (e.g. wan=/models/wan), got {entry!r}")
        out[name.strip()] = path.strip()
    return out


def tolerances(raw: Any) -> dict[str, Tolerance]:
    from .step_cost import parse_tolerances  # plugin cheap when off: only tolerances given load step_cost

    return parse_tolerances([raw] if isinstance(raw, str) else list(raw))


def git_ref(raw: Any) -> str:
    """A git revision, or "" for the merge base with the main branch."""
    value = str(raw).strip()
    if value.startswith("-"):
        raise ValueError(f"must be a git revision (a branch, tag or commit), got {raw!r}")
    return value


def shard(raw: Any) -> Any:
    from .ids import parse_shard  # plugin cheap when off: the ids and the scenarios they read load for a shard

    return parse_shard(raw)


def schedule(raw: Any) -> tuple[int, int, int]:
    return parse_schedule(raw)


@dataclass(frozen=True)
class Option:
    """One row: `name` is the GuardOptions field (guard=True) or the Settings field, the ini key `nosync_<name>`
    and the marker argument (marker=True). `flag` "" means `--nosync-<name>`; None: no command-line flag. Defaults
    are the fields' own (GuardOptions', Settings'): written once."""

    name: str
    help: str
    parse: Callable[[Any], Any] = text
    kind: str = "value"  # value, bool (a switch), list (a repeatable flag, an ini line list), optional (value or none)
    flag: str | None = ""
    ini: bool = True
    marker: bool = False
    guard: bool = False
    merge: Callable[[Any, Any], Any] | None = None  # (run's value, marker's value) → value; else the marker's wins
    path: bool = False  # a path: from the ini file, relative to that file
    key: str = ""  # the ini key and option dest, when not `nosync_<name>`

    @property
    def cli(self) -> str | None:
        if self.flag is None:
            return None
        return self.flag or "--nosync-" + self.name.replace("_", "-")

    @property
    def ini_key(self) -> str:
        return self.key or "nosync_" + self.name

    def read(self, raw: Any, source: str) -> Any:
        try:
            return self.parse(raw)
        except ValueError as exc:
            raise OptionError(f"{source}: {exc}") from None


TABLE: tuple[Option, ...] = (
    Option("enabled", "turn the nosync checks on (off: marked tests run unguarded, those marked gpu only where a GPU "
           "is visible)", flag, "bool", "--nosync", key="nosync"),
    # ---- per test: GuardOptions fields ------------------------------------------------------------------------
    Option("mode", "warn: collect every sync and fail once with all of them (default); error: fail fast at the first "
           "sync inside a step (the raise lands on the offending line, for --pdb)", choice(*Mode), marker=True,
           guard=True),
    Option("checks", f"checks of a marked test (one or more of {', '.join(CHECKS)})", check_names, flag=None, ini=False,
           marker=True, guard=True),
    Option("budget", "failing events a test tolerates", whole_number(0), flag=None, ini=False, marker=True,
           guard=True),
    Option("allow", "[(pattern, reason)]: places where a finding is accepted, each with its reason", allow_list,
           flag=None, ini=False, marker=True, guard=True),
    Option("count_outside_steps", "count findings before and after the denoising steps too", flag, "bool", flag=None,
           ini=False, marker=True, guard=True),
    Option("device_work", "False for a test that knowingly guards host-only code; otherwise a sync check that saw "
           "nothing run on the device fails (nothing was checked)", flag, "bool", flag=None, ini=False, marker=True,
           guard=True),
    Option("alloc_sites", "alloc_growth: note the line of every device allocation, to name the one that grows (slow: "
           "a dispatch mode and a stack per allocation; the suite does it only when a call grows)", flag, "bool",
           marker=True, guard=True),
    Option("profile", "also confirm syncs with torch.profiler (slower)", flag, "bool", guard=True),
    Option("trace_budgets", "NAME=VALUE: a budget on the trace's figures in steady-state steps "
           f"({', '.join(BUDGET_NAMES)}); repeatable (a marker's trace_budgets={{name: limit}} override them per test)",
           budgets, "list",
           flag="--nosync-trace-budget", marker=True, guard=True, merge=TraceBudgets.merged),
    # ---- the run ----------------------------------------------------------------------------------------------
    Option("backend", "cuda, emulate (CPU emulation) or auto (cuda when a GPU is visible)", choice(*BACKENDS)),
    Option("map_cuda", "on (default): under the emulate backend, code written for CUDA runs on the emulated device "
           "(device='cuda', .cuda(), torch.Generator('cuda'), torch.cuda.*); off: leave CUDA alone",
           choice("on", "off")),
    Option("report", "write one JSON report of the run to this path (gzip-compressed where it ends in .gz)", path=True),
    Option("suite", "add the built-in target suite to the session (e.g. from a diffusers checkout: pytest -m gpu "
           "--nosync --nosync-suite); without other paths, run only the suite", flag, "bool"),
    Option("targets", "comma-separated targets of the suite (default: all)", name_list),
    Option("pipeline_checks", "comma-separated checks the suite and the census run on every pipeline (default: "
           f"{', '.join(SUITE_CHECKS)}; cudagraphs is opt-in, on a GPU)", pipeline_checks, flag="--nosync-checks",
           key="nosync_checks"),
    Option("scenarios", "the features each pipeline is checked with (the suite's targets, diffusers' tester classes, "
           "a marked test's pipeline): NAME[:KEY=VALUE...][,NAME...] or all; plain (the default) is the pipeline as "
           "built (docs/scenarios.md)", scenario_list, marker=True),
    Option("steps", "denoising steps of each measured call (at least 2)", whole_number(2)),
    Option("dtype", "dtype of the suite's pipelines: bfloat16, float16 or float32 (default: bfloat16 on CUDA, float32 "
           "emulated)", dtype_name),
    Option("device", "device of the suite's pipelines (default: the backend's)", device_name),
    Option("checkpoint", "NAME=PATH: run target NAME from a local checkpoint (a directory or an id in the local HF "
           "cache; safetensors only, no remote code); repeatable", checkpoints, "list"),
    Option("baseline", "known-issues baseline (JSON): matching findings are reported as known, not failures; an entry "
           "that no longer matches fails the run (default with --nosync-suite: the one pytest-nosync ships; none: off)",
           path=True),
    Option("baseline_write", "write the run's failing and known findings to this path as a new baseline",
           path=True),
    Option("trace", "torch.profiler traces of guarded blocks: always (every block profiled and kept), on-failure "
           "(default: nothing is profiled while blocks pass; a failing suite call is run again under the profiler) "
           "or never", choice(*TRACE_MODES)),
    Option("trace_dir", "directory of the trace files, one per test id, never pruned (default: nosync-traces in "
           "pytest's cache directory, .pytest_cache/d/, or a private temporary directory without the cache plugin; "
           f"there the newest {KEEP_TRACES} traces are kept, at most {KEEP_BYTES >> 20} MB, and all of the run's)",
           path=True),
    Option("trace_gzip", "write traces as .json.gz", flag, "bool"),
    Option("trace_shapes", "profiler: record input shapes (slower)", flag, "bool"),
    Option("trace_memory", "profiler: record allocations (slower)", flag, "bool"),
    Option("trace_stack", "profiler: record Python stacks (slower)", flag, "bool"),
    Option("trace_flops", "profiler: estimate FLOPs (slower)", flag, "bool"),
    Option("trace_schedule", "WAIT,WARMUP,ACTIVE in denoising steps: record only the ACTIVE steps after WAIT+WARMUP "
           "(torch.profiler schedule; the work before step 0 counts with step 0)", schedule),
    Option("nsys", "for `nsys profile --capture-range=cudaProfilerApi`: NVTX ranges per step and region, "
           "cudaProfilerStart/Stop around the measured steps, and no torch.profiler", flag, "bool"),
    Option("metrics_tolerance", "NAME=PCT%[+FLOOR]: how far test_step_metrics' times and memory may exceed the run "
           "given to --benchmark-compare before the test fails (host_ms, device_ms, peak_memory; FLOOR in ms or "
           "bytes; defaults per backend, see docs/step-metrics.md); device ops are compared exactly; repeatable",
           tolerances, "list"),
    Option("metrics_rounds", "timed calls of each test_step_metrics (pytest-benchmark rounds; each figure is their "
           "median; default 3 on a GPU, 1 under emulation)", whole_number(1)),
    Option("changed", "run only the checks of diffusers' pipeline tester classes whose recorded code a change touches: "
           "the lines changed from REF (default: the merge base with main) to the working tree, against what each "
           "tester's pipeline ran when it was last checked (recorded in pytest's cache); a tester with no record runs. "
           "Write --nosync-changed=REF, or the flag alone after the test paths", git_ref, "optional", ini=False),
    Option("shard", "K/N: run the K-th of N shards of the census: whole test modules (a tester class never split, a "
           "family folder kept whole where it fits), packed longest-first by --nosync-durations; `python -m "
           "pytest_nosync census merge` makes the shards' reports one census", shard, ini=False),
    Option("durations", "JSON file of the census items' durations (pytest-split's format: node id → seconds): "
           "--nosync-shard packs by it, and xdist's workers take the tester classes longest first by it (without "
           "it, by the last run's in pytest's cache); an unsharded census run with it writes its items' durations "
           "there (a sharded one's: `census merge --durations`)", path=True),
    Option("graph_workers", "helper processes that trace the suite's graph checks while this one runs its other "
           "checks (auto: one per 4 cores, at most 3, none below 4 cores or for a single graph check; 0: trace them "
           "in this process, e.g. to see what a conftest patched)", workers),
    Option("share_gpus", "with pytest-xdist, let several workers share a GPU (default: one worker per GPU, more is an "
           "error)", flag, "bool", ini=False),
    Option("mps", "workers sharing a GPU run as clients of NVIDIA's MPS (auto: a running control daemon's, else one "
           "started for the run and quit at its end; off: none is started, and without a running one they time-share "
           "the GPU, several times slower)",
           choice("auto", "off")),
    Option("share_traces", "on: a census graph check whose key (the denoiser's class, code and config, "
           "dtype, scenario, every call's inputs, the torch and diffusers versions, dynamo's config) another tester "
           "class traced already takes that verdict, re-attributed to its own test id, instead of tracing again "
           "(docs/census.md); off (default, as measured on a GPU it took no verdict and cost time): every class traces",
           choice("off", "on")),
)  # fmt: skip
ROWS = {o.name: o for o in TABLE}
GUARD_ROWS = tuple(o for o in TABLE if o.guard)
MARKER_ROWS = {o.name: o for o in TABLE if o.marker}


@dataclass(frozen=True)
class Settings:
    """The run's choices, read once. `guard_cli`/`guard_ini`: the per-test options given on the command line and in
    the ini file, resolved against each test's marker by `plugin.options.resolve`."""

    enabled: bool = False
    backend: str = "auto"
    map_cuda: str = "on"
    report: str | None = None
    suite: bool = False
    targets: tuple[str, ...] = ()
    pipeline_checks: tuple[str, ...] = SUITE_CHECKS  # what the suite and the census check on every pipeline
    scenarios: tuple[Any, ...] = ()  # pytest_nosync.scenarios.Scenario; () is plain alone
    steps: int = 2
    dtype: str | None = None
    device: str | None = None
    checkpoint: dict[str, str] = field(default_factory=dict)
    baseline: str | None = None
    baseline_write: str | None = None
    trace: TraceConfig = field(default_factory=TraceConfig)
    trace_dir: str | None = None  # as given; None: the plugin puts traces in pytest's cache directory
    metrics_tolerance: dict[str, Tolerance] = field(default_factory=dict)  # over the backend's defaults
    metrics_rounds: int | None = None  # None: the backend's default (step_cost.default_rounds)
    graph_workers: int | None = None  # None: auto (plugin.graph_helpers.pool.auto_count)
    share_gpus: bool = False
    mps: str = "auto"
    share_traces: str = "off"
    shard: Any = None  # ids.Shard: this run's shard; None: the whole census
    durations: str | None = None
    changed: str | None = None  # None: every check; "": changes since the merge base with main; else since this REF
    guard_cli: Mapping[str, Any] = field(default_factory=dict)
    guard_ini: Mapping[str, Any] = field(default_factory=dict)

    @property
    def suite_dtype(self) -> str:
        """The dtype of the suite's pipelines: --nosync-dtype, else bfloat16 on CUDA and float32 emulated."""
        return self.dtype or ("bfloat16" if self.backend == "cuda" else "float32")


# ---- the reference page (docs/options.md, held to this table by a test) ----------------------------------------
_TRACE_DEFAULTS = {"trace": "on-failure", "trace_gzip": "off", "trace_shapes": "off", "trace_memory": "off",
                   "trace_stack": "off", "trace_flops": "off", "trace_schedule": "every step",
                   "nsys": "off"}  # fmt: skip


def _default(row: Option) -> str:
    # plugin cheap when off: only the reference page reads its defaults
    from .detection.guard_options import GuardOptions

    if row.name in _TRACE_DEFAULTS:  # the trace rows fill one TraceConfig (Settings.trace): each said as it is written
        return _TRACE_DEFAULTS[row.name]
    owner = GuardOptions if row.guard else Settings
    found = {f.name: f for f in fields(owner)}.get(row.name)
    if found is None:
        return "—"
    value = found.default_factory() if callable(found.default_factory) else found.default  # type: ignore[misc]
    if value is None or value in ((), {}):
        return "—"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple):
        return ", ".join(map(str, value))
    return str(value) if not hasattr(value, "any") else "—"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def reference_markdown() -> str:
    """docs/options.md: every option, its ini key, marker argument and default, from TABLE."""
    lines = [
        "# Options",
        "",
        "Generated from the option table (`pytest_nosync/option_table.py`) by",
        "`python -m pytest_nosync options > docs/options.md`; a test holds this page to the table. Most options are",
        "also ini keys (`[tool.pytest.ini_options]` in pyproject.toml). Nothing here does anything without `--nosync`",
        "(or `nosync = true`), and giving an option without it is a usage error. Give path values with `=`",
        "(`--nosync-report=out.json`): pytest takes an existing path after a space for a test path.",
        "",
        "## Per test",
        "",
        "Resolved for each test: the command line wins, then the test's `nosync` marker, then the ini file, then the",
        "default.",
        "",
        "| option | ini key | marker argument | default | meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in (r for r in TABLE if r.guard):
        flag = f"`{row.cli}`" if row.cli else "—"
        ini = f"`{row.ini_key}`" if row.ini else "—"
        marker = f"`{row.name}=`" if row.marker else "—"
        lines.append(f"| {flag} | {ini} | {marker} | {_cell(_default(row))} | {_cell(row.help)} |")
    lines += ["", "## The run", "", "| option | ini key | default | meaning |", "| --- | --- | --- | --- |"]
    for row in (r for r in TABLE if not r.guard):
        flag = f"`{row.cli}`" + (" (repeatable)" if row.kind == "list" else "") if row.cli else "—"
        ini = f"`{row.ini_key}`" if row.ini else "—"
        lines.append(f"| {flag} | {ini} | {_cell(_default(row))} | {_cell(row.help)} |")
    return "\n".join(lines) + "\n"
