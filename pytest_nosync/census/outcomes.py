"""What each check of a census reached, and the coverage those outcomes add up to.

A check's outcome is one of four verdicts: `checked` (it ran and judged: passed, or failed on what it found),
`raised` (the pipeline raised: an `error` finding), `not checked` (it could not reach its verdict, for a reason that
can change with the code under test: a `not_checked` finding, which fails unless the baseline accepts it) and
`skipped` (not checkable here, for a property of the pipeline or of this machine: counted with its reason, never
failed or passed). Only `checked` is a verdict on what the check is about; the coverage counts checks, and a class is
fully checked when every check of it is.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from .. import ids
from ..checks import SUITE_CHECKS
from ..findings import Kind, Report, Status, _Named
from ..source_identity import short_place

SCHEMA = "pytest-nosync-census/2"
ACCEPTED = (Status.KNOWN, Status.ALLOWED)


class Verdict(_Named):
    CHECKED = "checked"
    RAISED = "raised"
    NOT_CHECKED = "not checked"
    SKIPPED = "skipped"


class CensusSchemaError(ValueError):
    """A census document this version cannot read; the message says why, one sentence."""


@dataclass(frozen=True)
class CheckOutcome:
    """One check's outcome. `reason`: why it raised, could not run or was skipped; `accepted`: a baseline entry accepts
    the raise or the not-checked; `pipeline`: the class its tester builds. A raise also says what raised, in the words
    of what happened: the exception's type, its message's first line and its raise site (`where`, inside its package:
    `diffusers/hooks/faster_cache.py:470`), the same on every machine."""

    verdict: Verdict
    passed: bool | None = None
    reason: str = ""
    accepted: bool = False
    pipeline: str = ""
    exception: str = ""
    message: str = ""
    where: str = ""

    def __post_init__(self) -> None:
        if type(self.verdict) is not Verdict:
            object.__setattr__(self, "verdict", Verdict(self.verdict))

    @property
    def cause(self) -> tuple[str, str]:
        """What a raise is grouped by: its exception's type and its raise site (a message varies with shapes)."""
        return self.exception, self.where

    def cause_text(self) -> str:
        """The raise in one line: `IndexError: tuple index out of range` at `diffusers/hooks/faster_cache.py:470`."""
        said = _code(f"{self.exception}: {self.message}" if self.message else self.exception or self.reason)
        return f"{said} at {_code(self.where)}" if self.where else said

    def to_dict(self) -> dict[str, Any]:
        said = {k: v for k, v in asdict(self).items() if v or k not in ("exception", "message", "where")}
        return {**said, "verdict": str(self.verdict)}  # what raised only where something did

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> CheckOutcome:
        return cls(**{k: raw[k] for k in cls.__dataclass_fields__ if k in raw})


def tested_class_name(pipeline: Any) -> str:
    """The name of the diffusers class a tester's `pipeline_class` runs, which the census counts as checked: its
    own, or, for a subclass its test module defines (Cosmos' testers wrap each pipeline to give it a dummy safety
    checker), the nearest diffusers pipeline class it derives from."""
    if not inspect.isclass(pipeline):
        return getattr(pipeline, "__name__", "")
    own = next((k for k in pipeline.__mro__ if k.__module__.split(".")[0] == "diffusers"), object)
    return own.__name__ if _is_pipeline(own) else pipeline.__name__


def _is_pipeline(cls: type) -> bool:
    # looked up statically: a placeholder class (a backend missing, OpenCV's for ConsisID) raises ImportError on any
    # attribute its metaclass is asked for, which hasattr lets through
    found = (inspect.getattr_static(cls, name, None) is not None for name in ("from_pretrained", "components"))
    return all(found) and cls.__name__ not in _BASES


_BASES = frozenset({"DiffusionPipeline", "ModularPipeline"})  # deriving from these alone: a pipeline of its own


def outcome_of(report: Report, pipeline: str = "") -> CheckOutcome:
    """The outcome a check's report says: a raise first (what was seen before it is no verdict), then a check that
    could not run, else its verdict."""
    for kind, verdict in ((Kind.ERROR, Verdict.RAISED), (Kind.NOT_CHECKED, Verdict.NOT_CHECKED)):
        found = report.of_kind(kind)
        if found:
            accepted = all(f.status in ACCEPTED for f in found)
            first = found[0]
            if kind != Kind.ERROR:
                return CheckOutcome(verdict, report.passed, first.detail, accepted, pipeline)
            message = (str(first.data.get("message", "")).strip().splitlines() or [""])[0][:200]
            exception = str(first.data.get("exception", "")) or first.detail.partition(":")[0]
            return CheckOutcome(verdict, report.passed, first.detail, accepted, pipeline, exception, message,
                                short_place(first.where))  # fmt: skip
    return CheckOutcome(Verdict.CHECKED, report.passed, pipeline=pipeline)


def _code(text: str) -> str:
    """Markdown code of `text`, also where it holds a backtick (diffusers' messages quote attribute names so)."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def skipped(reason: str, pipeline: str = "") -> CheckOutcome:
    return CheckOutcome(Verdict.SKIPPED, reason=reason, pipeline=pipeline)


Outcomes = dict[str, dict[str, CheckOutcome]]  # tester class id → check (column) → its outcome


@dataclass
class Coverage:
    """The outcomes of a run (or of a census run in parts), the test modules that could not be imported (their
    error's last line → the modules) and the pipeline classes diffusers exports (`exports`: each class → why the run
    has no check of it, "" where it has one: through its tester, or a sibling's; empty where the run checked no
    diffusers) and those of them diffusers deprecates (`deprecated`: tried as the others, said apart)."""

    outcomes: Outcomes = field(default_factory=dict)
    import_failures: dict[str, list[str]] = field(default_factory=dict)
    exports: dict[str, str] = field(default_factory=dict)
    deprecated: set[str] = field(default_factory=set)

    def add(self, tester: str, column: str, outcome: CheckOutcome) -> None:
        self.outcomes.setdefault(tester, {})[column] = outcome

    def all(self) -> list[CheckOutcome]:
        return [o for checks in self.outcomes.values() for o in checks.values()]

    def count(self, verdict: Verdict) -> int:
        return sum(1 for o in self.all() if o.verdict == verdict)

    @property
    def fully_checked(self) -> int:
        return sum(1 for checks in self.outcomes.values() if all(o.verdict == Verdict.CHECKED for o in checks.values()))

    def reasons(self, *verdicts: Verdict) -> dict[str, list[str]]:
        """Why checks of these verdicts did not reach one: reason → `<tester>::<check>`, most frequent first."""
        out: dict[str, list[str]] = {}
        for tester, column, o in self._in_order():
            if o.verdict in verdicts:
                out.setdefault(o.reason, []).append(ids.coverage_key(tester, column))
        return _most_first(out)

    def summary(self) -> list[str]:
        """The coverage as the run's summary says it: checks and fully checked classes, then the grouped reasons."""
        lines = []
        checks = len(self.all())
        if checks:
            raised, not_checked = self.count(Verdict.RAISED), self.count(Verdict.NOT_CHECKED)
            skipped_ = self.count(Verdict.SKIPPED)
            line = (
                f"nosync: {self.count(Verdict.CHECKED)} of {checks} checks reached a verdict; {self.fully_checked} of "
                f"{len(self.outcomes)} pipeline classes fully checked"
            )
            others = [f"{n} {what}" for n, what in ((raised, "raised"), (not_checked, "not checked"),
                                                     (skipped_, "not checkable here")) if n]  # fmt: skip
            lines.append(line + (f"; {', '.join(others)}:" if others else ""))
            for cause, where in self._by_cause().items():  # what raised, where: the failures give the stacks
                testers = {ids.parse_coverage_key(w).tester for w in where}
                lines.append(f"  {len(where)} check(s) of {len(testers)} class(es) raised {cause} (e.g. {where[0]})")
            for verdict, said in ((Verdict.NOT_CHECKED, "not checked"), (Verdict.SKIPPED, "not checkable here")):
                for reason, where in self.reasons(verdict).items():
                    testers = {ids.parse_coverage_key(w).tester for w in where}
                    accepted = sum(1 for w in where if self._outcome(w).accepted)
                    note = f", {accepted} accepted by the baseline" if accepted else ""
                    lines.append(
                        f"  {len(where)} check(s) of {len(testers)} class(es) {said}{note}: {reason} (e.g. {where[0]})"
                    )
        lines += self._exports_summary()
        for error, modules in _most_first({e: sorted(m) for e, m in self.import_failures.items()}).items():
            lines.append(
                f"nosync: {len(modules)} test module(s) could not be imported: {error}{_import_hint(error)} "
                f"(e.g. {modules[0]})"
            )
        return lines

    def exported(self) -> tuple[list[str], dict[str, list[str]]]:
        """The exported pipeline classes a check of which reached its verdict (through their tester or a sibling's),
        and every other one under its reason (the run's, or its checks' first), most frequent first."""
        seen: dict[str, list[CheckOutcome]] = {}
        for o in self.all():
            seen.setdefault(o.pipeline, []).append(o)
        checked, others = [], {}
        for name, why in self.exports.items():
            if any(o.verdict == Verdict.CHECKED for o in seen.get(name, ())):
                checked.append(name)
            else:
                others.setdefault(why or _no_verdict(seen.get(name, [])), []).append(name)
        return checked, _most_first(others)

    def _exports_summary(self) -> list[str]:
        if not self.exports or not self.outcomes:  # a run that checked nothing (--collect-only) has no count
            return []
        checked, others = self.exported()
        siblings = {o.pipeline for tester, checks in self.outcomes.items() if ids.parse_untested(tester) is not None
                    for o in checks.values() if o.verdict == Verdict.CHECKED}  # fmt: skip
        deprecated = len(self.deprecated & set(checked))
        line = (
            f"nosync: {len(checked)} of {len(self.exports)} exported pipeline classes checked "
            f"({len(siblings & set(checked))} through a sibling tester"
            + (f", {deprecated} deprecated)" if deprecated else ")")
        )
        rest = sum(len(names) for names in others.values())
        lines = [line + (f"; {rest} not:" if rest else "")]
        for why, names in others.items():
            shown = ", ".join(sorted(names)[:3]) + (", ..." if len(names) > 3 else "")
            lines.append(f"  {len(names)} class(es): {why} (e.g. {shown})")
        return lines

    def _by_cause(self) -> dict[str, list[str]]:
        """The raised checks by what raised (`IndexError at diffusers/...:470: <first line>`), most frequent first."""
        out: dict[str, list[str]] = {}
        for tester, column, o in self._in_order():
            if o.verdict == Verdict.RAISED:
                said = f"{o.exception} at {o.where}: {o.message}" if o.exception else o.reason
                out.setdefault(said.rstrip(": "), []).append(ids.coverage_key(tester, column))
        return _most_first(out)

    def _in_order(self) -> list[tuple[str, str, CheckOutcome]]:
        """(tester, column, outcome) by tester and column, not in the order the workers finished: a run says the same
        whatever the order."""
        return [(t, c, self.outcomes[t][c]) for t in sorted(self.outcomes) for c in column_order(self.outcomes[t])]

    def _outcome(self, where: str) -> CheckOutcome:
        tester, column = ids.parse_coverage_key(where)
        return self.outcomes[tester][column]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "checks": len(self.all()),
            "verdicts": {str(v): self.count(v) for v in Verdict},
            "classes": len(self.outcomes),
            "fully_checked": self.fully_checked,
            "reasons": self.reasons(Verdict.RAISED, Verdict.NOT_CHECKED, Verdict.SKIPPED),
            "import_failures": self.import_failures,
            "outcomes": {t: {c: o.to_dict() for c, o in checks.items()} for t, checks in self.outcomes.items()},
            **({"exports": self.exports} if self.exports else {}),
            **({"deprecated": sorted(self.deprecated)} if self.deprecated else {}),
        }

    @classmethod
    def from_dict(cls, raw: Any, source: str = "the report") -> Coverage:
        """A census document's coverage; CensusSchemaError when it is of another schema (an older release's)."""
        if not isinstance(raw, Mapping) or raw.get("schema") != SCHEMA:
            found = raw.get("schema", "none") if isinstance(raw, Mapping) else type(raw).__name__
            raise CensusSchemaError(
                f"{source} has a census of schema {found}, not {SCHEMA}: census it again with this pytest-nosync"
            )
        outcomes = {
            tester: {column: CheckOutcome.from_dict(o) for column, o in checks.items()}
            for tester, checks in raw.get("outcomes", {}).items()
        }
        failures = {k: list(v) for k, v in raw.get("import_failures", {}).items()}
        return cls(outcomes, failures, dict(raw.get("exports", {})), set(raw.get("deprecated", [])))


def column_order(columns: Iterable[str]) -> list[str]:
    """Columns in the census table's order: the suite's checks in CHECKS' order, then the others (a check under a
    scenario) sorted."""
    columns = set(columns)
    return [c for c in SUITE_CHECKS if c in columns] + sorted(columns - set(SUITE_CHECKS))


def _most_first(grouped: dict[str, list[str]]) -> dict[str, list[str]]:
    """Groups by size, the largest first; groups of one size by their key (not by when they were met)."""
    return dict(sorted(grouped.items(), key=lambda kv: (-len(kv[1]), kv[0])))


def merge(parts: Iterable[Coverage]) -> Coverage:
    """One census from runs over disjoint parts of a checkout."""
    merged = Coverage()
    for part in parts:
        for tester, checks in part.outcomes.items():
            merged.outcomes.setdefault(tester, {}).update(checks)
        for error, modules in part.import_failures.items():
            merged.import_failures.setdefault(error, []).extend(modules)
        add_exports(merged, part.exports, part.deprecated)
    return merged


def add_exports(coverage: Coverage, exports: Mapping[str, str], deprecated: Iterable[str] = ()) -> None:
    """Exported classes and why a run has no check of them: a class one part checks has a check (""); `deprecated`:
    those diffusers deprecates."""
    coverage.deprecated.update(deprecated)
    for name, why in exports.items():
        if name not in coverage.exports or not why:
            coverage.exports[name] = why


def _no_verdict(outcomes: list[CheckOutcome]) -> str:
    """Why a class the run has checks of reached no verdict: its first check's outcome, said as the table says it."""
    first = next(iter(outcomes), None)
    if first is None:
        return "no check of it ran in this run"
    if first.verdict == Verdict.RAISED:
        return f"raised {first.exception or first.reason}" + (f" at {first.where}" if first.where else "")
    return f"{first.verdict}: {first.reason}" if first.verdict == Verdict.NOT_CHECKED else first.reason


def import_error(text: str) -> str:
    """The line that says why a test module could not be imported, from pytest's collection error text."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    said = [line[1:].strip() for line in lines if line.startswith("E ")]
    return (said or lines or ["an unknown error"])[-1][:200]


def _import_hint(error: str) -> str:
    if error.startswith(("ModuleNotFoundError", "ImportError")):
        return " — install diffusers' test dependencies (docs/census/README.md lists them)"
    return ""
