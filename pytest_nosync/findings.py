"""Findings and Reports: the plain data every other part passes around.

Detectors produce Findings, the policy gives each one a status, renderers turn them into text, JSON or
annotations. Nothing here knows about pytest or about how a finding was detected.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

SCHEMA_VERSION = 1

# Kinds: dtoh_sync (the host waits for a value computed on the device), htod_sync (a blocking copy of host memory
# to the device), device_sync (an explicit synchronize), graph_break, recompile, alloc_growth, host_overhead,
# layout_transform (layout-transform or copy kernels over a trace budget, profiling.budgets), error (the code under
# test raised an exception: suite.guarded_call).
SYNC_KINDS = frozenset({"dtoh_sync", "htod_sync", "device_sync"})

# Where in a guarded block a finding happened.
BEFORE_STEPS = "before_steps"
IN_STEP = "step"
AFTER_STEPS = "after_steps"
# The region the guard opens around each call of the denoiser (the transformer's forward).
DENOISER_REGION = "transformer_forward"

# What the policy decided about a finding.
STATUS_FAIL = "fail"  # counts against the test
STATUS_ALLOWED = "allowed"  # matched an allow-list entry (with its reason)
STATUS_KNOWN = "known"  # matched a known-issues baseline entry
STATUS_OUTSIDE = "outside_steps"  # before/after the denoising steps, not counted by default
STATUS_BUDGET = "within_budget"  # counted, but the test's budget tolerates it
STATUS_NEW = "new"  # not evaluated yet


@dataclass(frozen=True)
class Frame:
    filename: str
    lineno: int
    function: str
    line: str = ""

    @property
    def where(self) -> str:
        return f"{self.filename}:{self.lineno}"


@dataclass(frozen=True)
class Finding:
    """One observed problem.

    `where` is the file:line of the first frame outside torch and this plugin; `stack` is the short
    Python stack behind it, innermost first. `step` is the denoising step (None outside the steps),
    `region` the annotated region it happened in. `detail` says what exactly happened (the offending
    expression, a graph-break reason, a byte count), `data` carries numbers a renderer or a budget
    may need. `source` names the detector(s) that saw it.
    """

    kind: str
    where: str
    stack: tuple[Frame, ...] = ()
    step: int | None = None
    phase: str = IN_STEP
    region: str | None = None
    count: int = 1
    hint: str = ""
    detail: str = ""
    source: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)
    status: str = STATUS_NEW
    note: str = ""  # why the status: the allow-list reason, the baseline reference

    @property
    def key(self) -> tuple:
        """Findings with the same key are the same problem seen again: their counts add up."""
        return (self.kind, self.where, self.phase, self.step, self.region, self.detail)

    @property
    def filename(self) -> str:
        return self.where.rsplit(":", 1)[0]

    @property
    def lineno(self) -> int:
        tail = self.where.rsplit(":", 1)[-1]
        return int(tail) if tail.isdigit() else 0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["stack"] = [asdict(f) for f in self.stack]
        out["data"] = dict(self.data)
        return out

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Finding:
        values = dict(raw)
        values["stack"] = tuple(Frame(**f) for f in values.get("stack", ()))
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in values.items() if k in known})

    def with_status(self, status: str, note: str = "") -> Finding:
        return replace(self, status=status, note=note)


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
    passed: bool | None = None
    summary: str = ""
    not_checked: list[str] = field(default_factory=list)  # why a check could not run: the report fails
    metrics: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)

    @property
    def failures(self) -> list[Finding]:
        return [f for f in self.findings if f.status == STATUS_FAIL]

    def of_kind(self, *kinds: str) -> list[Finding]:
        return [f for f in self.findings if f.kind in kinds]

    def to_dict(self) -> dict[str, Any]:
        return {
            "test_id": self.test_id,
            "check": self.check,
            "target": self.target,
            "backend": self.backend,
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
        values["findings"] = [Finding.from_dict(f) for f in values.get("findings", ())]
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in values.items() if k in known})
