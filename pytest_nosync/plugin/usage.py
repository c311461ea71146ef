"""Usage errors found before collection: each is one sentence and exit status 4, never a traceback or a run that
checks nothing (a named backend that is not there, an unknown target, a checkpoint that cannot be found, a file
that cannot be written)."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import pytest

from .. import baseline, ids, run_report
from ..checks import lookup
from ..option_table import Settings
from ..profiling import export
from ..scenarios import PLAIN, SCENARIOS
from ..suite import SHIPPED_BASELINE, SUITE_DIR
from .xdist import BASELINE_KEY


def resolve_backend(settings: Settings, controllers: str | None = None) -> str:
    """The run's backend. A backend the user named that cannot run here is a usage error (a GPU runner whose
    driver broke must not pass the gate); `auto` falls back to the CPU emulation, and the header says so.

    An xdist worker takes the backend its controller resolved (`controllers`): a worker that cannot reach the GPU it
    was given (a CUDA_VISIBLE_DEVICES entry its driver does not know) must fail the run, not emulate under a header
    that says cuda."""
    from ..detection import devices  # a usage error stays quick: torch is imported once the options passed

    try:
        return devices.resolve(controllers or settings.backend)
    except devices.BackendUnavailable as exc:
        if controllers:
            gpu = os.environ.get("CUDA_VISIBLE_DEVICES")
            raise pytest.UsageError(
                f"--nosync: this xdist worker cannot run the backend its controller chose ({controllers}, "
                f"CUDA_VISIBLE_DEVICES={gpu!r} here): {exc}"
            ) from None
        if settings.backend == "auto":
            raise pytest.UsageError(f"--nosync: no backend can run here: {exc}") from None
        raise pytest.UsageError(f"--nosync-backend {settings.backend}: {exc}") from None


def check_targets(settings: Settings) -> None:
    """Target names in --nosync-targets and --nosync-checkpoint exist; each checkpoint asked for can be found."""
    if not settings.targets and not settings.checkpoint:
        return
    # a usage error stays quick: the registry imports torch, only for a run that names a target
    from ..suite.targets.registry import UnknownTarget, checkpoint_problem, lookup

    for option, names in (("--nosync-targets", settings.targets), ("--nosync-checkpoint", tuple(settings.checkpoint))):
        try:
            lookup(names)
        except UnknownTarget as exc:
            raise pytest.UsageError(f"{option}: {exc}") from None
    for name, path in settings.checkpoint.items():
        problem = checkpoint_problem(path)
        if problem:
            raise pytest.UsageError(f"--nosync-checkpoint {name}={path}: {problem} (nothing is downloaded)")


def check_rootdir(config: pytest.Config) -> None:
    """An option value pytest took for a test path. pytest chooses the rootdir (and so the ini file, with this
    repository's baseline) before plugins add their options, and then reads `--nosync-report out.json` as the
    option `--nosync-report` and the path `out.json`: when that file exists outside the project, the run silently
    loses its ini file. Say so, and how to write it, instead of judging the run without its settings."""
    try:
        from _pytest.config.findpaths import determine_setup  # private: skip the check where it changed
    except ImportError:
        return
    namespace = config.known_args_namespace
    if namespace.rootdir or namespace.inifilename:
        return  # the rootdir was chosen explicitly
    given = list(config.invocation_params.args)
    positional = {os.path.abspath(ids.node_path(str(a))) for a in namespace.file_or_dir}
    taken = [
        (given[i - 1], value)
        for i, value in enumerate(given)
        if i > 0
        and given[i - 1].startswith("--")
        and "=" not in given[i - 1]
        and not value.startswith("-")
        and os.path.exists(value)
        and os.path.abspath(value) not in positional
    ]
    if not taken:
        return
    wanted = {
        "inifile": None,
        "override_ini": getattr(namespace, "override_ini", None),
        "args": list(namespace.file_or_dir),
        "rootdir_cmd_arg": None,
        "invocation_dir": config.invocation_params.dir,
    }
    accepted = inspect.signature(determine_setup).parameters
    try:
        rootpath = determine_setup(**{k: v for k, v in wanted.items() if k in accepted})[0]
    except Exception:
        return
    if Path(rootpath) != config.rootpath:
        option, value = taken[0]
        raise pytest.UsageError(
            f"{option} {value}: pytest took the existing path {value} for a test path while choosing the rootdir "
            f"({config.rootpath} instead of {rootpath}, so that directory's ini settings were not read); "
            f"write {option}={value}"
        )


def add_suite_to_args(config: pytest.Config) -> None:
    """--nosync-suite: collect the built-in suite; alone when no path was given on the command line."""
    suite = str(SUITE_DIR)
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        if suite not in config.args:
            config.args.append(suite)
    else:
        config.args[:] = [suite]


def load_baseline(config: pytest.Config, settings: Settings) -> baseline.Baseline | None:
    """The baseline that judges the run: --nosync-baseline (or its ini key); else, for the built-in suite from any
    checkout (--nosync-suite), the one pytest-nosync ships with it; `none` turns it off. An xdist worker takes the
    one its controller resolved."""
    path = getattr(config, "workerinput", {}).get(BASELINE_KEY) or settings.baseline  # a worker: its controller's
    if path == "none":
        return None
    if not path and settings.suite:
        path = str(SHIPPED_BASELINE)
    if not path:
        return None
    shipped = Path(path).resolve() == SHIPPED_BASELINE.resolve()
    try:
        known = baseline.Baseline.load(path, shipped=shipped)
    except baseline.BaselineError as exc:
        raise pytest.UsageError(f"--nosync-baseline: {exc}") from None
    version = run_report.diffusers_version()
    if not shipped and not settings.baseline_write and known.entries and not known.applying(version):
        # written on another release: judged by it, every finding would fail as new, for no change of the code's
        ranges = ", ".join(sorted({e.diffusers for e in known.entries if e.diffusers}))
        raise pytest.UsageError(
            f"--nosync-baseline: {path} was written for diffusers {ranges} and none of its {len(known.entries)} "
            f"entries applies to the diffusers under test ({version}): write one on it with --nosync-baseline-write"
        )
    return known


def check_pipeline_checks(settings: Settings) -> None:
    """An opt-in check that cannot run with the run's backend is one sentence before anything runs."""
    for check in lookup(settings.pipeline_checks):
        if check.needs_gpu and settings.backend != "cuda":
            raise pytest.UsageError(
                f"--nosync-checks: {check.name} needs a GPU ({check.needs_gpu}), and the run's backend is "
                f"{settings.backend}"
            )


def check_scenarios(settings: Settings) -> None:
    """Scenarios named one by one can run here: a backend this machine cannot run (a CUDA-only feature under the
    emulation, an attention backend whose package is not installed) is one sentence before anything runs. With
    `all`, each scenario that cannot is counted as not applicable instead."""
    named = settings.scenarios
    if settings.changed is not None and any(s.name != PLAIN for s in named or ()):
        # what each tester's record holds is the code its plain pipeline ran: a change only a scenario runs (a cache
        # hook, offloading) would select no class, and the run would pass without checking it
        raise pytest.UsageError(
            "--nosync-changed selects by the code each tester's plain pipeline ran, and a scenario's own code (a cache "
            "hook, offloading) is not in it: run --nosync-scenarios without --nosync-changed"
        )
    if not named or {s.name for s in named} == set(SCENARIOS):
        return
    for scenario in named:
        if scenario.cuda_only and settings.backend != "cuda":
            backend = settings.backend
            raise pytest.UsageError(
                f"--nosync-scenarios: {scenario.name} cannot run with the {backend} backend: {scenario.cuda_only}"
            )
        if scenario.feature == "attention_backend":
            # diffusers, seconds of imports: only a run naming an attention backend pays them here
            from diffusers.models.attention_dispatch import AttentionBackendName, _check_attention_backend_requirements

            try:
                _check_attention_backend_requirements(AttentionBackendName(scenario.value("backend")))
            except (RuntimeError, ImportError, ValueError) as exc:
                raise pytest.UsageError(
                    f"--nosync-scenarios: {scenario.name} cannot run here: {str(exc).splitlines()[0][:200]}"
                ) from None


def check_dtype(settings: Settings) -> None:
    """A --nosync-dtype the run's device cannot compute in is one sentence before anything runs: a bfloat16 run on a
    GPU without bfloat16 kernels (before Ampere), or a device whose convolution, matmul, attention or normalization
    refuses the dtype (a few ops in it, once)."""
    if not settings.dtype:
        return
    from ..detection import devices  # a usage error stays quick: torch only for a run that names a dtype

    problem = devices.dtype_problem(settings.dtype, settings.device, settings.backend)
    if problem:
        raise pytest.UsageError(f"--nosync-dtype {settings.dtype}: {problem}")


def check_outputs(settings: Settings) -> None:
    outputs = (
        ("--nosync-report", settings.report, "nosync-report.json"),
        ("--nosync-baseline-write", settings.baseline_write, "nosync-baseline.json"),
        ("--nosync-durations", settings.durations, "nosync-durations.json"),
    )
    for option, path, example in outputs:
        if path:
            try:
                run_report.check_writable(path, example)
            except OSError as exc:
                raise pytest.UsageError(f"{option}: {exc}") from None
    trace = settings.trace
    if settings.trace_dir and trace.mode != "never" and not trace.nsys:
        try:
            export.check_directory(trace.directory)
        except OSError as exc:
            raise pytest.UsageError(f"--nosync-trace-dir: cannot write traces to {trace.directory}: {exc}") from None
    if trace.nsys:
        from ..detection import devices  # a usage error stays quick: torch only for a run that asks for nsys

        if not devices.cuda_available():
            raise pytest.UsageError(
                "--nosync-nsys needs a CUDA device (NVTX ranges and cudaProfilerStart/Stop): run it under "
                "`nsys profile --capture-range=cudaProfilerApi` on a GPU runner"
            )
