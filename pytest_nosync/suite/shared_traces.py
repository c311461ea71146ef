"""A graph check's verdict computed once per key and given to every pipeline with the same key (--nosync-share-traces).

Many of diffusers' tester classes drive the same denoiser class with the same tiny config, dtype, scenario and inputs
(the Stable Diffusion family: dozens of classes on one UNet). The graph check compiles the denoiser's `forward` alone
(detectors.dynamo), so its verdict is decided by what detectors.trace_inputs digests. The key has two parts:

- before any call (`base`): the check and how it is run (steps, warm-up, mode, denoiser attribute), the scenario and
  its parameters, the denoiser's class, config and code digest, Python's, torch's and diffusers' versions, dynamo's
  config;
- from the calls (`calls`): each denoiser call's step, arguments' metadata and Python values, every module's state and
  torch's global modes, in order; and, where the verdict has findings, the tensor values too (`values`): after a graph
  break the Python that runs eagerly may branch on a value, so a break is shared only with a pipeline whose denoiser
  saw the same numbers. A clean trace (no finding) read no value: it is shared on the metadata alone.

The first pipeline with a base key traces as always, its calls recorded, and leaves its report in the store. A later
one with the same base key makes a probe: the same guarded call with the forward uncompiled (no dynamo), its calls
digested; where a stored verdict has the same calls (and values, where they count) it takes that verdict, its
findings (whose places are the denoiser's code lines, the same code) judged again by its own baseline and policy, and
re-attributed to its own test id; `metrics["graph_trace_shared_from"]` names the test that traced. Otherwise it traces.
A report with an `error` finding (a raise, maybe in the pipeline's own code), or whose calls could not be digested, is
never stored. A run that keeps traces (`--nosync-trace always`, trace budgets) or fails fast shares nothing, and under
`on-failure` a verdict that fails for the taker is traced again, as its trace is kept.

The store is a directory of JSON files, one per key, written atomically (os.replace): the xdist workers of one run
share it (plugin.census puts it under the run's base temporary directory); without a directory it lives in this
process.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from .. import run_report
from ..detection.detectors import trace_inputs
from ..detection.guard_options import GuardOptions
from ..findings import Kind, Mode, Report
from ..policy import rejudge
from ..scenarios import Scenario
from .checks import CallKwargs, plan, warm
from .guarded_call import guarded_call

SHARED_FROM = "graph_trace_shared_from"  # the report's metric naming the test whose trace gave its verdict
ANY_VALUES = "any"  # a clean verdict's record: the values do not count


@dataclass
class Counts:
    """What the store did in this process: traced (stored or not), taken from another test, probes that found none."""

    traced: int = 0
    taken: int = 0
    probes_missed: int = 0
    unshareable: list[str] = field(default_factory=list)


class TraceStore:
    """Verdicts by key: files under `directory` (shared by the run's processes), or this process's memory."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory is not None else None
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
        self._memory: dict[str, dict[str, Any]] = {}
        self.counts = Counts()

    def has_base(self, base: str) -> bool:
        if any(name.startswith(base + ".") for name in self._memory):
            return True
        return self.directory is not None and any(self.directory.glob(f"{base}.*.json"))

    def get(self, base: str, calls: str, values: str) -> dict[str, Any] | None:
        for name in (f"{base}.{calls}.{ANY_VALUES}", f"{base}.{calls}.{values}"):
            if name in self._memory:
                return self._memory[name]
            if self.directory is not None and (self.directory / f"{name}.json").exists():
                record = json.loads((self.directory / f"{name}.json").read_text(encoding="utf-8"))
                self._memory[name] = record
                return record
        return None

    def put(self, name: str, record: dict[str, Any]) -> None:
        self._memory[name] = record
        if self.directory is None:
            return
        handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=".writing-", suffix=".json")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(record, out)
        os.replace(temporary, self.directory / f"{name}.json")  # another worker reads the whole record or none


def shareable(options: GuardOptions) -> bool:
    """Whether a verdict may be shared under these options: not where a trace of every call is kept or read (a trace
    budget), not in fail-fast mode."""
    trace = options.trace
    keeps = trace is not None and (trace.mode == "always" or trace.nsys)
    return options.mode == Mode.WARN and not keeps and not options.trace_budgets.any


def run_shared(
    store: TraceStore,
    scenario: Scenario,
    check: str,
    pipe: Any,
    call_kwargs: CallKwargs,
    options: GuardOptions,
    compute: Callable[[], Report],
    *,
    steps: int,
    test_id: str,
    target: str,
) -> Report:
    """The graph check's report: another test's verdict with the same key, or `compute()` (suite.checks.run_check)
    traced and stored. See the module doc."""
    denoiser = getattr(pipe, options.denoiser.split(",")[0].strip(), None)
    if not isinstance(denoiser, torch.nn.Module) or not shareable(options):
        return compute()
    measured_steps, warmup = plan(check, pipe, steps)
    base = _base_key(denoiser, scenario, check, options, measured_steps, warmup)
    if base is not None and store.has_base(base):
        taken = _taken(store, base, pipe, call_kwargs, options, check, measured_steps, warmup, test_id, target)
        if taken is not None:
            store.counts.taken += 1
            return taken
        store.counts.probes_missed += 1
    recorder = trace_inputs.CallRecorder()
    with trace_inputs.recording(recorder):
        report = compute()
    store.counts.traced += 1
    if base is None or recorder.unshareable or not recorder.count or report.of_kind(Kind.ERROR):
        if recorder.unshareable:
            store.counts.unshareable.append(recorder.unshareable)
        return report
    values = ANY_VALUES if not report.findings else recorder.values
    stored = replace(report, artifacts={})
    stored.metrics = {k: v for k, v in report.metrics.items() if k not in ("diagnosis", "trace_rerun_reproduced")}
    store.put(f"{base}.{recorder.calls}.{values}", {"from": test_id, "report": stored.to_dict()})
    return report


def _taken(
    store: TraceStore,
    base: str,
    pipe: Any,
    call_kwargs: CallKwargs,
    options: GuardOptions,
    check: str,
    steps: int,
    warmup: int,
    test_id: str,
    target: str,
) -> Report | None:
    """The probe (the guarded call with the forward uncompiled) and the stored verdict its calls match, judged for
    this test; None where none matches."""
    options = replace(options, checks=(check,), warmup_steps=warmup)
    try:
        warm(pipe, call_kwargs, steps)
    except Exception:  # the pipeline fails: its own check reports it
        return None
    recorder = trace_inputs.CallRecorder(probe=True)
    with trace_inputs.recording(recorder):
        probe = guarded_call(pipe, lambda: call_kwargs(steps), replace(options, trace=None), test_id=test_id,
                             check=check, target=target)  # fmt: skip
    if recorder.unshareable or not recorder.count or probe.of_kind(Kind.ERROR):
        return None
    record = store.get(base, recorder.calls, recorder.values)
    if record is None:
        return None
    stored = Report.from_dict(record["report"])
    if stored.steps != probe.steps:
        return None
    report = rejudge(replace(stored, test_id=test_id, target=target, artifacts={}), options.policy, options.known)
    trace = options.trace
    if report.passed is False and trace is not None and trace.mode == "on-failure":
        return None  # its own run would keep the failing call's trace: it traces
    report.metrics = {**stored.metrics, SHARED_FROM: record["from"]}
    return report


def _base_key(
    denoiser: torch.nn.Module, scenario: Scenario, check: str, options: GuardOptions, steps: int, warmup: int
) -> str | None:
    """The key's part known before any call (see the module doc), as a digest; None where the config cannot be
    described."""
    try:
        config = trace_inputs.config_of(denoiser)
    except trace_inputs.Unshareable:
        return None
    parts = (
        check, steps, warmup, str(options.mode), options.denoiser, options.count_outside_steps,
        scenario.name, sorted((k, repr(v)) for k, v in scenario.settings().items()),
        trace_inputs.qualname(type(denoiser)), config, trace_inputs.code_digest(denoiser),
        sys.version.split()[0], torch.__version__, run_report.diffusers_version(), trace_inputs.config_digest(),
    )  # fmt: skip
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:32]
