"""Per-step cost of a pipeline as data, and the judgement of one run's numbers against a saved run's.

The numbers come from the `step_metrics` and `device_ops` detectors (pytest_nosync.detection.detectors.step_metrics),
gathered by pytest_nosync.suite.measure over several timed calls and one counting call, and are stored by the plugin
in pytest-benchmark's `extra_info`. Judging:
  device ops    exact: more ops in a step than the saved run fails, naming the ops added and the lines that issued
                them (sites are matched by function and source text, so a line that only moved is the same site;
                the files are read for that only when a run is saved or a step has more ops);
  times         host ms outside the denoiser and device ms per steady step (the mean over the steady steps), failing
                above the saved value by more than a tolerance, a relative part and a floor in the metric's unit;
  peak memory   per steady step, above what was in use when the first step began, with a tolerance (default:
                exact; the figure is deterministic).
Decreases are wins, reported beside. Numbers from another backend are not comparable (ops differ between CUDA and
the emulation's dispatch, times differ by nature): `NotComparable` says so.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import source_identity
from .findings import Finding, Location, Phase

# 2: peak memory counts from what was in use when the first step began (1 counted everything on the device).
SCHEMA = 2
TIME_METRICS = {"host_ms": "host_ms_outside_denoiser", "device_ms": "device_ms"}
TOLERANCE_NAMES = ("host_ms", "device_ms", "peak_memory")
HINTS = {
    "device_ops": "more aten ops run on the device each step (an extra cast, copy or elementwise op, a fusion that "
    "stopped happening): each is a kernel launch on a GPU; remove the op or move it out of the loop",
    "host_ms": "more host work per step outside the denoiser (scheduler, loop code, hooks): a trace of the step "
    "(--nosync-trace always) shows what filled it",
    "device_ms": "the device is busy longer each step: more or slower kernels (device_ops names added ops)",
    "peak_memory": "a step holds more device memory at its peak: a tensor kept alive longer, or a larger intermediate",
}


class NotComparable(ValueError):
    """Two runs whose numbers cannot be compared; the message says why, in one sentence."""


@dataclass(frozen=True)
class Tolerance:
    relative: float  # a fraction of the saved value
    floor: float = 0.0  # in the metric's unit (ms, bytes): differences below it are noise whatever the fraction

    def exceeded(self, before: float, after: float) -> bool:
        return after - before > max(self.relative * before, self.floor)

    def __str__(self) -> str:
        floor = f"+{self.floor:g}" if self.floor else ""
        return f"{self.relative * 100:g}%{floor}"


# Per backend, chosen from the run-to-run spread of the suite's metrics (benchmarks/step_metrics_spread.py; the
# figures are in docs/validation.md): device ops and peak memory do not vary between runs, times vary by up to a few
# times on the tiny pipelines, whose steps are launch-bound. A time gate catches gross regressions; the exact gate is
# the op count.
DEFAULT_TOLERANCES: dict[str, dict[str, Tolerance]] = {
    "cuda": {"host_ms": Tolerance(1.0, 0.5), "device_ms": Tolerance(1.0, 2.0), "peak_memory": Tolerance(0.0)},
    "emulate": {"host_ms": Tolerance(1.0, 6.0), "device_ms": Tolerance(0.25, 0.1), "peak_memory": Tolerance(0.0)},
}
_TOLERANCE = re.compile(r"^(\d+(?:\.\d+)?)%(?:\+(\d+(?:\.\d+)?))?$")


# Timed calls per test_step_metrics. On a GPU the timed calls are cheap beside the counting call and times are the
# noisy part; under emulation every op already runs through Python, ops and peak memory are exact and host ms is a
# coarse gate (100% + 6 ms), so one call that times and counts is enough.
DEFAULT_ROUNDS = {"cuda": 3, "emulate": 1}


def default_rounds(backend: str) -> int:
    return DEFAULT_ROUNDS.get(backend, DEFAULT_ROUNDS["cuda"])


def counts_when_timed(backend: str) -> bool:
    """Whether the timed calls also count the ops (no counting call of its own): only where counting costs little
    beside what every op already costs, under emulation."""
    return backend != "cuda"


def default_tolerances(backend: str) -> dict[str, Tolerance]:
    return dict(DEFAULT_TOLERANCES.get(backend, DEFAULT_TOLERANCES["cuda"]))


def parse_tolerances(entries: Iterable[str]) -> dict[str, Tolerance]:
    """`NAME=PCT%[+FLOOR]` entries (e.g. `host_ms=30%+0.2`): the tolerances given, to lay over the backend's
    defaults; ValueError names a bad entry."""
    out: dict[str, Tolerance] = {}
    for entry in entries:
        name, sep, value = str(entry).partition("=")
        name = name.strip()
        if not sep or name not in TOLERANCE_NAMES:
            raise ValueError(f"takes NAME=PCT% with NAME one of {', '.join(TOLERANCE_NAMES)}, got {entry!r}")
        match = _TOLERANCE.match(value.strip())
        if not match:
            raise ValueError(f"{name}: takes a percentage and an optional floor (e.g. 30% or 30%+0.2), got {value!r}")
        out[name] = Tolerance(float(match.group(1)) / 100, float(match.group(2) or 0.0))
    return out


# ---- the numbers of one run ---------------------------------------------------------------------------------------
def combine(
    timed: list[Mapping[str, Any]], counted: Mapping[str, Any], *, steady_from: int, about: Mapping[str, Any]
) -> dict[str, Any]:
    """One run's numbers from the `step_metrics` metrics of several timed calls and the `device_ops` metrics of one
    counting call: per step, the median of each time over the calls, the peak memory, the ops and their sites."""
    steps: dict[str, Any] = {}
    for key in sorted(counted, key=int):
        if int(key) < steady_from:
            continue
        rounds = [t[key] for t in timed if key in t]
        entry: dict[str, Any] = {
            "device_ops": counted[key]["total"],
            "ops": counted[key]["ops"],
            "sites": counted[key]["sites"],
            "peak_bytes": max((r["peak_bytes"] for r in rounds), default=0),
        }
        for column in ("host_ms", "host_ms_outside_denoiser", "device_ms"):
            values = [r[column] for r in rounds if r.get(column) is not None]
            entry[column] = round(statistics.median(values), 3) if values else None
            entry[f"{column}_rounds"] = values
        steps[key] = entry
    return {"schema": SCHEMA, **about, "steady_from": steady_from, "rounds": len(timed), "steps": steps}


def summary(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """Per steady step, as one row: ops (the mean over steps), host ms outside the denoiser, device ms, peak MiB."""
    steps = list(metrics.get("steps", {}).values())
    if not steps:
        return {}

    def mean(column: str) -> float | None:
        values = [s[column] for s in steps if s.get(column) is not None]
        return round(statistics.fmean(values), 3) if values else None

    return {
        "device_ops": mean("device_ops"),
        "host_ms": mean("host_ms_outside_denoiser"),
        "device_ms": mean("device_ms"),
        "peak_bytes": max((s["peak_bytes"] for s in steps if s.get("peak_bytes") is not None), default=None),
    }


# ---- judging against a saved run ----------------------------------------------------------------------------------
@dataclass
class CostComparison:
    findings: list[Finding] = field(default_factory=list)
    wins: list[str] = field(default_factory=list)
    changes: dict[str, dict[str, Any]] = field(default_factory=dict)  # metric → {before, after}
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"wins": self.wins, "changes": self.changes, "notes": self.notes}


def check_comparable(saved: Mapping[str, Any], current: Mapping[str, Any]) -> None:
    if saved.get("schema") != SCHEMA:
        raise NotComparable(
            f"the saved step metrics have schema {saved.get('schema')!r} and this pytest-nosync measures by schema "
            f"{SCHEMA}: save a run of the base again with this version"
        )
    if saved.get("backend") != current.get("backend"):
        raise NotComparable(
            f"the saved run measured on {saved.get('backend')} ({saved.get('device')}), this one on "
            f"{current.get('backend')} ({current.get('device')}): op counts and times are not comparable across "
            "backends; save a run on this backend first"
        )


def compare(
    saved: Mapping[str, Any],
    current: Mapping[str, Any],
    tolerances: Mapping[str, Tolerance] | None = None,
    *,
    where: str,
) -> CostComparison:
    """Judge `current` against `saved` (both from `combine`) with `tolerances` laid over the backend's defaults.
    `where`: the file:line time and memory findings point at (the pipeline's `__call__`, where its loop is)."""
    check_comparable(saved, current)
    tolerances = {**default_tolerances(str(current.get("backend"))), **(tolerances or {})}
    out = CostComparison()
    if saved.get("device") != current.get("device"):
        out.notes.append(f"the saved run was on {saved.get('device')}, this one on {current.get('device')}")
    before_steps, after_steps = saved.get("steps", {}), current.get("steps", {})
    common = [k for k in after_steps if k in before_steps]
    if set(before_steps) != set(after_steps):
        out.notes.append(
            f"steady steps differ (saved {sorted(before_steps, key=int)}, now {sorted(after_steps, key=int)}): "
            "only the common ones are compared"
        )
    for key in common:
        _compare_ops(out, int(key), before_steps[key], after_steps[key])
        _compare_memory(out, int(key), before_steps[key], after_steps[key], tolerances["peak_memory"], where)
    before, after = summary(saved), summary(current)
    for name, column in (("host_ms", "host_ms"), ("device_ms", "device_ms")):
        _compare_time(out, name, before.get(column), after.get(column), tolerances[name], where)
    out.changes["device_ops"] = {"before": before.get("device_ops"), "after": after.get("device_ops")}
    out.changes["peak_bytes"] = {"before": before.get("peak_bytes"), "after": after.get("peak_bytes")}
    return out


def identify_sites(numbers: dict[str, Any]) -> dict[str, Any]:
    """`numbers` (from `combine`) with each site's identity filled in (function, source text, occurrence; see
    pytest_nosync.source_identity), read from the files of this environment: before the numbers are saved, so
    that a later comparison matches a line that only moved. Sites already identified are kept as they are."""
    for entry in numbers.get("steps", {}).values():
        entry["sites"] = _identified(entry.get("sites", ()))
    return numbers


def _identified(sites: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for site in sites:
        if "code" not in site:
            identity = source_identity.identify_place(Location.parse(site["where"]))
            site = {
                "where": site["where"],
                "function": identity.function if identity else "",
                "code": identity.code if identity else "",
                "occurrence": identity.occurrence if identity else 0,
                "ops": site["ops"],
            }
        out.append(dict(site))
    return out


def _site_key(site: Mapping[str, Any]) -> tuple:
    """A site across checkouts and edits: its file inside the package, function, code and occurrence; the line
    number only when the source text is unknown."""
    filename = Location.parse(site["where"]).file
    if site.get("code"):
        return (filename, site.get("function", ""), site["code"], site.get("occurrence", 0))
    return (site["where"],)


def _compare_ops(out: CostComparison, step: int, before: Mapping[str, Any], after: Mapping[str, Any]) -> None:
    total_before, total_after = before["device_ops"], after["device_ops"]
    if total_after < total_before:
        out.wins.append(f"step {step}: {total_before} → {total_after} device ops ({total_after - total_before})")
    if total_after <= total_before:
        return
    ops_added = {op: n - before["ops"].get(op, 0) for op, n in after["ops"].items() if n > before["ops"].get(op, 0)}
    listed = ", ".join(f"{op} +{n}" for op, n in sorted(ops_added.items(), key=lambda kv: -kv[1]))
    headline = f"step {step}: {total_before} → {total_after} device ops (+{total_after - total_before}): {listed}"
    saved = list(before.get("sites", ()))
    saved_sites = {_site_key(s): s for s in saved}
    found = False
    # Identified only now that a step has more ops (it reads the files), and only to match a saved run that has
    # identities: without them both sides are matched by place.
    current = _identified(after.get("sites", ())) if all("code" in s for s in saved) else after.get("sites", ())
    for site in current:
        old = saved_sites.get(_site_key(site), {}).get("ops", {})
        added = {op: n - old.get(op, 0) for op, n in site["ops"].items() if n > old.get(op, 0)}
        if not added:
            continue
        found = True
        ops = ", ".join(f"{op} +{n}" for op, n in sorted(added.items(), key=lambda kv: -kv[1]))
        out.findings.append(
            _finding("device_ops", site["where"], step, sum(added.values()), f"{ops} at this line ({headline})",
                     {"before": total_before, "after": total_after, "added": added, "code": site.get("code", "")})
        )  # fmt: skip
    if not found:  # more ops overall, none new at a known line (sites not recorded): the op names still say what
        out.findings.append(
            _finding("device_ops", "<unknown>:0", step, total_after - total_before, headline,
                     {"before": total_before, "after": total_after, "added": ops_added})
        )  # fmt: skip


def _compare_memory(
    out: CostComparison,
    step: int,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    tolerance: Tolerance,
    where: str,
) -> None:
    b, a = before.get("peak_bytes") or 0, after.get("peak_bytes") or 0
    if a < b:
        out.wins.append(f"step {step}: peak device memory {_mib(b)} → {_mib(a)}")
    elif tolerance.exceeded(b, a):
        detail = f"step {step}: peak device memory {_mib(b)} → {_mib(a)} (+{a - b} bytes, tolerance {tolerance})"
        out.findings.append(_finding("peak_memory", where, step, 1, detail, {"before": b, "after": a}))


def _compare_time(
    out: CostComparison, name: str, before: float | None, after: float | None, tolerance: Tolerance, where: str
) -> None:
    if before is None or after is None:
        return
    out.changes[name] = {"before": before, "after": after}
    label = "host ms outside the denoiser" if name == "host_ms" else "device ms"
    change = f"{label} per steady step {before:.3f} → {after:.3f} ({_percent(before, after)})"
    if tolerance.exceeded(before, after):
        detail = f"{change}, tolerance {tolerance}"
        out.findings.append(_finding(name, where, None, 1, detail, {"before": before, "after": after}))
    elif tolerance.exceeded(after, before):  # as far below as a regression would be above: a win, not noise
        out.wins.append(change)


def _finding(kind: str, where: str, step: int | None, count: int, detail: str, data: dict[str, Any]) -> Finding:
    return Finding(kind=kind, where=where, step=step, phase=Phase.IN_STEP, region="loop", count=count, hint=HINTS[kind],
                   detail=detail, source="step_metrics", data=data)  # fmt: skip


def _mib(n: float) -> str:
    return f"{n / 2**20:.2f} MiB"


def _percent(before: float, after: float) -> str:
    return f"{(after - before) / before * 100:+.0f}%" if before else "new"
