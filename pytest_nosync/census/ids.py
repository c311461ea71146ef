"""The one grammar of a census test id: `<module>::<TesterClass>::nosync[<check>]`, with `-<scenario>` after the check
for a scenario other than `plain` (`nosync[syncs-first_block_cache]`), and pytest-xdist's `@<group>` after it where
`--dist loadgroup` reports one."""

from __future__ import annotations

import re
from typing import NamedTuple

PREFIX = "nosync"  # the item's name: nosync[<check>] or nosync[<check>-<scenario>]
PLAIN = "plain"  # the scenario of a pipeline as its tester builds it
_ID = re.compile(r"^(?P<tester>.+)::nosync\[(?P<check>[A-Za-z_]+)(?:-(?P<scenario>[A-Za-z0-9_]+))?\](?:@.*)?$")


class CensusId(NamedTuple):
    """A census item's parts: its tester class's id (`<module path>::<TesterClass>`), its check and scenario."""

    tester: str
    check: str
    scenario: str = PLAIN

    @property
    def name(self) -> str:
        return item_name(self.check, self.scenario)

    @property
    def column(self) -> str:
        """The check, and the scenario where it is not plain: what a table's cell or a coverage entry is about."""
        return self.check if self.scenario == PLAIN else f"{self.check}-{self.scenario}"

    def __str__(self) -> str:
        return f"{self.tester}::{self.name}"


def item_name(check: str, scenario: str = PLAIN) -> str:
    return f"{PREFIX}[{check}]" if scenario == PLAIN else f"{PREFIX}[{check}-{scenario}]"


def parse(nodeid: str) -> CensusId | None:
    """The parts of a census item's node id (also as xdist reports it); None for any other test."""
    match = _ID.match(nodeid)
    if match is None:
        return None
    return CensusId(match["tester"], match["check"], match["scenario"] or PLAIN)
