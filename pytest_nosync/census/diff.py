"""What changed between two censuses — the merge base's and a pull request's — as Markdown fit for a pull-request
comment or `$GITHUB_STEP_SUMMARY`:

    python -m pytest_nosync census diff base.json head.json

Per class and check run in both: a count that grew (syncs per steady step, graph breaks, growth, walks) is worse, with
the places it added; a check that reached its verdict in the base and not in the head (it raised, could not run, was
not checkable) is worse; the reverse of either is better. A class or check run in one census only (a changed-only
head runs a few classes) is named, not judged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import ids
from ..findings import Report
from .outcomes import Coverage
from .table import Cell, Row, column_title, markdown_row, rows

SHOWN = 10  # checks run in one census only, named; the rest counted


class NothingInCommon(ValueError):
    """The two censuses ran no class and check in common: nothing to compare."""


@dataclass(frozen=True)
class Change:
    pipeline: str
    tester: str
    column: str
    base: Cell
    head: Cell

    @property
    def worse(self) -> bool:
        if self.base.checked != self.head.checked:
            return self.base.checked  # it stopped reaching its verdict
        return self.head.checked and self.head.count > self.base.count

    @property
    def better(self) -> bool:
        if self.base.checked != self.head.checked:
            return self.head.checked
        return self.head.checked and self.head.count < self.base.count

    @property
    def added(self) -> list[str]:
        return [p for p in self.head.places if p not in self.base.places]

    @property
    def removed(self) -> list[str]:
        return [p for p in self.base.places if p not in self.head.places]

    def cells(self) -> tuple[str, ...]:
        tester = ids.short_tester(self.tester)
        places = ", ".join(f"`{p}`" for p in self.added) or "—"
        gone = ", ".join(f"`{p}`" for p in self.removed) or "—"
        return (self.pipeline, tester, column_title(self.column), self.base.text(), self.head.text(), places, gone)


@dataclass
class CensusDiff:
    changes: list[Change]
    compared: int  # classes run in both
    only_base: list[str] = field(default_factory=list)
    only_head: list[str] = field(default_factory=list)
    # the checks of classes run in both that one census has and the other has not: (tester, column, why the other not)
    one_sided: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def worse(self) -> list[Change]:
        return [c for c in self.changes if c.worse]

    @property
    def better(self) -> list[Change]:
        return [c for c in self.changes if c.better]

    def markdown(self, title: str, base_env: Mapping[str, Any], head_env: Mapping[str, Any]) -> str:
        worse_classes = len({c.tester for c in self.worse})
        better_classes = len({c.tester for c in self.better})
        lines = [
            f"## {title}",
            "",
            f"diffusers {base_env.get('diffusers')} (base) → {head_env.get('diffusers')} (head), backend "
            f"{head_env.get('backend')} ({head_env.get('device')}): {self.compared} pipeline classes run in both; "
            f"**{worse_classes} got worse**, {better_classes} better, "
            f"{self.compared - len({c.tester for c in self.changes if c.worse or c.better})} unchanged.",
        ]
        if self.only_head or self.only_base:
            lines += ["", f"Run in one census only (not judged): {len(self.only_head)} in the head, "
                      f"{len(self.only_base)} in the base."]  # fmt: skip
        if self.one_sided:
            named = [f"`{ids.short_tester(t)}` {column_title(c)} ({why})" for t, c, why in self.one_sided]
            more = f", and {len(named) - SHOWN} more" if len(named) > SHOWN else ""
            lines += ["", f"Checks of classes run in both that one census has and the other has not (not judged): "
                      f"{len(named)}: {'; '.join(named[:SHOWN])}{more}."]  # fmt: skip
        for heading, chosen in (("Worse", self.worse), ("Better", self.better)):
            if not chosen:
                continue
            lines += [
                "",
                f"### {heading}",
                "",
                "| pipeline | tester | check | base | head | places added | places gone |",
                "| --- | --- | --- | --- | --- | --- | --- |",
            ]
            lines += [markdown_row(change.cells()) for change in chosen]
        if not self.worse and not self.better:
            lines += ["", "Nothing changed in the classes run in both."]
        return "\n".join(lines) + "\n"


def diff(base_reports: Iterable[Report], base: Coverage, head_reports: Iterable[Report], head: Coverage) -> CensusDiff:
    """The changes from the base census to the head's, over the classes and checks both ran."""
    base_rows = {r.tester: r for r in rows(base_reports, base)}
    head_rows = {r.tester: r for r in rows(head_reports, head)}
    common = sorted(t for t in set(base_rows) & set(head_rows) if _shared(base_rows[t], head_rows[t]))
    if not common:
        raise NothingInCommon("the two censuses ran no pipeline class in common")
    changes, one_sided = [], []
    for tester in common:
        was, now = base_rows[tester], head_rows[tester]
        for column in _shared(was, now):
            change = Change(now.pipeline, tester, column, was.cells[column], now.cells[column])
            if change.worse or change.better:
                changes.append(change)
        for column in dict.fromkeys([*was.cells, *now.cells]):  # each census's columns: one may have more
            ran = (_ran(was, column), _ran(now, column))
            if ran in ((True, False), (False, True)):
                one_sided.append(
                    (tester, column, _missing(now if ran[0] else was, column, "head" if ran[0] else "base"))
                )
    return CensusDiff(
        sorted(changes, key=lambda c: (c.pipeline, c.tester, c.column)),
        len(common),
        sorted(set(base_rows) - set(head_rows)),
        sorted(set(head_rows) - set(base_rows)),
        one_sided,
    )


def _missing(row: Row, column: str, side: str) -> str:
    """Why `side`'s census has nothing of a check the other has: it did not run it, or holds no report of it."""
    cell = row.cells.get(column)
    return f"no report in the {side}" if cell is not None and cell.outcome is not None else f"not run in the {side}"


def _ran(row: Row, column: str) -> bool:
    """The census ran the check and holds what it said (a verdict without its report has nothing to compare)."""
    cell = row.cells.get(column)
    return cell is not None and cell.outcome is not None and cell.reported


def _shared(base: Row, head: Row) -> list[str]:
    return [c for c in head.cells if _ran(base, c) and _ran(head, c)]
