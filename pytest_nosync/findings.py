"""Findings and Reports: the plain data every other part passes around.

Detectors produce Findings, the policy gives each one a status, renderers turn them into text, JSON or
annotations. Nothing here knows about pytest or about how a finding was detected.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from enum import Enum
from typing import Any, NamedTuple

SCHEMA_VERSION = 1


class _Named(str, Enum):
    """A name from a closed vocabulary: compares and serialises as its string, prints as it too."""

    def __str__(self) -> str:
        return str(self.value)

    __format__ = str.__format__
    __hash__ = str.__hash__  # Enum's is a Python call, and findings are hashed by kind and phase when merged


class Kind(_Named):
    """What a finding is."""

    DTOH_SYNC = "dtoh_sync"  # the host waits for a value computed on the device
    HTOD_SYNC = "htod_sync"  # a blocking copy of host memory to the device
    DEVICE_SYNC = "device_sync"  # an explicit synchronize
    GRAPH_BREAK = "graph_break"
    RECOMPILE = "recompile"
    CUDAGRAPH_SKIP = "cudagraph_skip"  # inductor ran a compiled step without capturing it in a CUDA graph
    CUDAGRAPH_PARTITION = "cudagraph_partition"  # inductor split the step's graph around ops no CUDA graph can hold
    ALLOC_GROWTH = "alloc_growth"
    HOST_OVERHEAD = "host_overhead"
    LAYOUT_TRANSFORM = "layout_transform"  # layout-transform or copy kernels over a trace budget (profiling.budgets)
    ERROR = "error"  # the code under test raised an exception (suite.guarded_call)
    NOT_CHECKED = "not_checked"  # a check could not reach its verdict; `detail` says why (fails unless accepted)
    DEVICE_OPS = "device_ops"  # step metrics judged against a saved run (step_cost)
    HOST_MS = "host_ms"
    DEVICE_MS = "device_ms"
    PEAK_MEMORY = "peak_memory"


SYNC_KINDS = frozenset({Kind.DTOH_SYNC, Kind.HTOD_SYNC, Kind.DEVICE_SYNC})


class Phase(_Named):
    """Where in a guarded block a finding happened."""

    BEFORE_STEPS = "before_steps"
    IN_STEP = "step"
    AFTER_STEPS = "after_steps"


class Status(_Named):
    """What the policy decided about a finding."""

    FAIL = "fail"  # counts against the test
    ALLOWED = "allowed"  # matched an allow-list entry (with its reason)
    KNOWN = "known"  # matched a known-issues baseline entry
    OUTSIDE = "outside_steps"  # before/after the denoising steps, not counted by default
    BUDGET = "within_budget"  # counted, but the test's budget tolerates it
    NEW = "new"  # not evaluated yet


class Mode(_Named):
    """How a guard reacts to a sync inside a step."""

    WARN = "warn"  # collect every sync, fail once with all of them
    ERROR = "error"  # raise at the first one, on the offending line (for --pdb)


BACKENDS = ("auto", "cuda", "emulate")  # where syncs are detected; auto: cuda when a GPU is visible, else emulate

# The region the guard opens around each call of the denoiser (the transformer's forward).
DENOISER_REGION = "transformer_forward"


NOT_CHECKED_HINT = (
    "a check that could not run is not a pass: fix what stopped it, or accept it in the baseline with a reason"
)


class Location(NamedTuple):
    """A place in source, `file:line`, parsed once. `line` None: a place without a line (a label such as an
    allocation no frame could be named for). A tuple: hashed and compared in C (findings are merged by place)."""

    file: str
    line: int | None = None

    @classmethod
    def parse(cls, place: str | Location) -> Location:
        if isinstance(place, Location):
            return place
        file, sep, line = place.rpartition(":")
        return cls(file, int(line)) if sep and line.isdigit() else cls(place)

    def __str__(self) -> str:
        return self.file if self.line is None else f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Frame:
    filename: str
    lineno: int
    function: str
    line: str = ""

    @property
    def where(self) -> Location:
        return Location(self.filename, self.lineno)


@dataclass(frozen=True)
class KnownMatch:
    """The known-issues baseline entry a finding matched: its index in the baseline, why it is accepted, and where
    the upstream work on it is tracked."""

    entry: int
    reason: str
    upstream: str = ""

    def __str__(self) -> str:
        return f"baseline #{self.entry}: {self.reason}" + (f" ({self.upstream})" if self.upstream else "")


@dataclass(frozen=True)
class Finding:
    """One observed problem.

    `where` is the place of the first frame outside torch and this plugin; `stack` is the short
    Python stack behind it, innermost first. `step` is the denoising step (None outside the steps),
    `region` the annotated region it happened in. `detail` says what exactly happened (the offending
    expression, a graph-break reason, a byte count), `data` carries numbers a renderer or a budget
    may need. `source` names the detector(s) that saw it. `known` is the baseline entry it matched.
    Strings are accepted for the typed fields (a kind's name, "file:line") and stored typed.
    """

    kind: Kind
    where: Location
    stack: tuple[Frame, ...] = ()
    step: int | None = None
    phase: Phase = Phase.IN_STEP
    region: str | None = None
    count: int = 1
    hint: str = ""
    detail: str = ""
    source: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)
    status: Status = Status.NEW
    note: str = ""  # why the status: the allow-list reason, the budget, the baseline entry
    known: KnownMatch | None = None

    def __post_init__(self) -> None:
        # Typed values pass untouched: a finding is made and replaced several times for every sync recorded.
        if type(self.kind) is not Kind:
            object.__setattr__(self, "kind", Kind(self.kind))
        if type(self.where) is not Location:
            object.__setattr__(self, "where", Location.parse(self.where))
        if type(self.phase) is not Phase:
            object.__setattr__(self, "phase", Phase(self.phase))
        if type(self.status) is not Status:
            object.__setattr__(self, "status", Status(self.status))

    @property
    def key(self) -> tuple:
        """Findings with the same key are the same problem seen again: their counts add up."""
        return (self.kind, self.where, self.phase, self.step, self.region, self.detail)

    @property
    def filename(self) -> str:
        return self.where.file

    @property
    def lineno(self) -> int:
        return self.where.line or 0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(kind=str(self.kind), where=str(self.where), phase=str(self.phase), status=str(self.status))
        out["stack"] = [asdict(f) for f in self.stack]
        out["data"] = dict(self.data)
        return out

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Finding:
        values = dict(raw)
        values["stack"] = tuple(Frame(**f) for f in values.get("stack", ()))
        if values.get("known"):
            values["known"] = KnownMatch(**values["known"])
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in values.items() if k in known})

    def with_status(self, status: Status, note: str = "", known: KnownMatch | None = None) -> Finding:
        return replace(self, status=status, note=note, known=known)


UNPLACED = Location("<check>")  # where a not-checked finding is: the check itself, no line of code


def not_checked_finding(reason: str) -> Finding:
    """The finding of a check that could not reach its verdict, saying why; judged like any other (it fails unless
    the allow-list or the baseline accepts it)."""
    return Finding(kind=Kind.NOT_CHECKED, where=UNPLACED, step=None, phase=Phase.IN_STEP, hint=NOT_CHECKED_HINT,
                   detail=reason, source="check")  # fmt: skip


def merge(findings: Iterable[Finding]) -> list[Finding]:
    """Fold repeats of the same problem into one finding with a count, keeping first-seen order."""
    merged: dict[tuple, Finding] = {}
    for finding in findings:
        seen = merged.get(finding.key)
        if seen is None:
            merged[finding.key] = finding
        else:
            merged[finding.key] = replace(
                seen,
                count=seen.count + finding.count,
                source=_join_sources(seen.source, finding.source),
            )
    return list(merged.values())


def _join_sources(a: str, b: str) -> str:
    parts = [p for p in (a.split("+") + b.split("+")) if p]
    return "+".join(dict.fromkeys(parts))


@dataclass
class Report:
    """The findings of one guarded block (one test), with what is needed to judge and reproduce it."""

    findings: list[Finding] = field(default_factory=list)
    test_id: str = ""
    check: str = ""
    target: str = ""
    backend: str = ""
    steps: int = 0
    scenario: str = "plain"  # the feature the pipeline was checked with (pytest_nosync.scenarios)
    passed: bool | None = None
    summary: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)

    @property
    def failures(self) -> list[Finding]:
        return [f for f in self.findings if f.status == Status.FAIL]

    @property
    def not_checked(self) -> list[str]:
        """Why checks could not reach their verdict, where nothing accepts it (the report fails)."""
        return [f.detail for f in self.findings if f.kind == Kind.NOT_CHECKED and f.status in (Status.FAIL, Status.NEW)]

    def of_kind(self, *kinds: str) -> list[Finding]:
        return [f for f in self.findings if f.kind in kinds]

    def to_dict(self) -> dict[str, Any]:
        return {
            "test_id": self.test_id,
            "check": self.check,
            "target": self.target,
            "backend": self.backend,
            "scenario": self.scenario,
            "steps": self.steps,
            "passed": self.passed,
            "summary": self.summary,
            "not_checked": self.not_checked,
            "metrics": self.metrics,
            "artifacts": self.artifacts,
            "findings": [f.to_dict() for f in self.findings],
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Report:
        values = dict(raw)
        findings = [Finding.from_dict(f) for f in values.get("findings", ())]
        said = {f.detail for f in findings if f.kind == Kind.NOT_CHECKED}
        # a report written before not-checked reasons were findings lists them apart
        older = [r for r in values.get("not_checked", ()) if r not in said]
        findings += [not_checked_finding(r).with_status(Status.FAIL) for r in older]
        values["findings"] = findings
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in values.items() if k in known})
