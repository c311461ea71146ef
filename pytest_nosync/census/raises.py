"""Why the cells that raised raised, said once per cause: a cause is an exception's type at its raise site
(`IndexError` at `diffusers/hooks/faster_cache.py:470`), numbered by how many cells it hit, so that a table's cells
point at a footnote (`raised [^r1]`) and the footnotes say what happened.

A cell that raises is the pipeline's: the scenario census sets a feature's parameters as diffusers documents them for
that pipeline (docs/scenarios.md), and a kernel that has no support for the inputs is counted as not applicable, so
what is left raising is diffusers' to fix (`census raises`, census.upstream, lists each cause with a command that
reproduces it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .outcomes import CheckOutcome, Verdict

Cause = tuple[str, str]  # (exception type, raise site)


@dataclass
class Causes:
    """The causes of a table's raised cells, numbered most frequent first; each with the outcomes it raised in."""

    number: dict[Cause, int] = field(default_factory=dict)
    outcomes: dict[Cause, list[CheckOutcome]] = field(default_factory=dict)

    def ref(self, outcome: CheckOutcome) -> str:
        """A cell's pointer to its cause's footnote ("" for a raise recorded without its cause, an older report's)."""
        number = self.number.get(outcome.cause)
        return f"[^r{number}]" if number is not None else ""

    def footnotes(self, noun: str = "cell") -> list[str]:
        """One Markdown footnote per cause: what raised, where, and in how many cells."""
        lines = []
        for cause, number in self.number.items():
            hit = self.outcomes[cause]
            lines.append(f"[^r{number}]: {hit[0].cause_text()} ({len(hit)} {noun}{'s' * (len(hit) != 1)})")
        return lines


def causes(outcomes: Iterable[CheckOutcome]) -> Causes:
    """The causes of the raised outcomes among `outcomes` (those that say what raised)."""
    by_cause: dict[Cause, list[CheckOutcome]] = {}
    for outcome in outcomes:
        if outcome is not None and outcome.verdict == Verdict.RAISED and outcome.exception:
            by_cause.setdefault(outcome.cause, []).append(outcome)
    ranked = sorted(by_cause, key=lambda cause: (-len(by_cause[cause]), cause))
    return Causes({cause: n for n, cause in enumerate(ranked, 1)}, {cause: by_cause[cause] for cause in ranked})
