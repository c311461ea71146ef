"""Every id the plugin builds or reads, in one grammar: each kind is built and parsed here, as a small typed value, and
nothing else in the package splits an id string (tests/unit/test_ids.py holds it to that).

- **a node id with its xdist group** — `<node id>@<group>`, as pytest-xdist's `--dist loadgroup` reports a test
  (`split_group`, `plain_nodeid`, `with_group`). An "@" inside a parameter id, which a bracket follows, is the test's.
- **a suite test** — `<module>::test_<check>[<target>]`, `[<target>-<scenario>]` for a scenario other than plain
  (`target_param` builds the parameter id, the work unit of the target's tests too); a regression case that takes a
  target has `[<target>-<its own parameters>]` (`target_test` reads the target, and the scenario of a check's test).
- **a census item** — `<module path>::<TesterClass>::nosync[<check>]`, `nosync[<check>-<scenario>]` for a scenario
  other than plain (`CensusId`, `item_name`, `parse`); the tester class's id is its first part (`short_tester`),
  and its reports' target is `<module stem>::<TesterClass>` (`tester_target`).
- **a column** — `<check>`, or `<check>-<scenario>` for a scenario other than plain: a census table's column, the key
  of a tester's outcomes (`Column`, `column`, `parse_column`).
- **an untested class's tester** — `<sibling tester's id>::<PipelineClass>`: an exported pipeline class no tester
  names, checked through a sibling tester of its family (census.untested), under that tester in its module; its
  census items are `<module path>::<Sibling>::<PipelineClass>::nosync[<check>]` and its reports' target
  `<module stem>::<Sibling>::<PipelineClass>` (`untested_tester`, `untested_target`, `parse_untested` →
  `UntestedId`). diffusers' tester classes are never nested, so a tester id of three parts is always one of these.
- **a shard** — `K/N`, the K-th of N shards of a census (`--nosync-shard`; `Shard`, `parse_shard`).
- **a coverage key** — `<tester>::<column>`: a check of a tester, as the coverage's reasons name it (`CoverageKey`,
  `coverage_key`, `parse_coverage_key`).

Check and scenario names hold no "-" and no "::" (the registries' names: letters, digits, `_`); a scenario's
parameters (`taylorseer_cache:max_order=2` on the command line) are never part of an id, only its name.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import NamedTuple

from .checks import CHECKS
from .scenarios import PLAIN, SCENARIOS

GROUP = "@"  # pytest-xdist's loadgroup: `<node id>@<group>`
PART = "::"  # between a node id's file and its classes and function; between a coverage key's tester and column
SCENARIO = "-"  # between a check (or a target) and its scenario, in a column and in a parameter id
PREFIX = "nosync"  # a census item's name: nosync[<check>] or nosync[<check>-<scenario>]
UNTESTED = "untested"  # the keyword of an untested class's checks (`-k untested`; their ids cannot be given as is)
_SHARD = re.compile(r"^\s*([0-9]+)\s*/\s*([0-9]+)\s*$")  # ASCII digits: `\d` takes any script's
MOST_SHARDS = 1000  # a CI matrix's jobs; more is a typo (1/99999999999 asked for that many shards' loads in memory)
_CENSUS = re.compile(r"^(?P<tester>.+)::nosync\[(?P<check>[A-Za-z_]+)(?:-(?P<scenario>[A-Za-z0-9_]+))?\](?:@.*)?$")


# ---- a node id with its xdist group ------------------------------------------------------------------------------
def split_group(nodeid: str) -> tuple[str, str]:
    """(the node id as collected, its xdist group or ""): `--dist loadgroup` reports `<id>@<xdist group>`. (An "@"
    inside a parameter id, which a bracket follows, is the test's own.)"""
    head, at, group = nodeid.rpartition(GROUP)
    if at and head and "[" not in group and "]" not in group:
        return head, group
    return nodeid, ""


def plain_nodeid(nodeid: str) -> str:
    """A node id as collected, without the `@<group>` xdist may add."""
    return split_group(nodeid)[0]


def with_group(nodeid: str, group: str) -> str:
    """The node id as xdist's loadgroup reports it."""
    return f"{nodeid}{GROUP}{group}"


def node_path(nodeid: str) -> str:
    """The file part of a node id (or of a command-line argument that names a test: `path::Class::test`)."""
    return nodeid.split(PART, 1)[0]


def function_name(nodeid: str) -> str:
    """The name of a node id's last part without its parameter id: `test_syncs` of `m.py::test_syncs[flux]`."""
    return nodeid.rsplit(PART, 1)[-1].split("[", 1)[0]


def parameters(nodeid: str) -> list[str] | None:
    """The parts of a node id's parameter id (pytest joins a test's parameters with "-"); None without one."""
    if not (nodeid.endswith("]") and "[" in nodeid):
        return None
    return nodeid[nodeid.rindex("[") + 1 : -1].split(SCENARIO)


# ---- a suite test ------------------------------------------------------------------------------------------------
def target_param(target: str, scenario: str = PLAIN) -> str:
    """The parameter id of a built-in target's test with a scenario, and its tests' work unit: the target's name for
    the plain pipeline, `<target>-<scenario>` for another."""
    return target if scenario == PLAIN else f"{target}{SCENARIO}{scenario}"


def suite_check(nodeid: str) -> str:
    """The check a suite test runs (`test_<check>`: its ids carry the scenario), "" for any other test."""
    name = function_name(nodeid)
    check = name[len("test_") :] if name.startswith("test_") else ""
    return check if check in CHECKS else ""


class TargetTest(NamedTuple):
    """A test of a built-in target, read from its node id: the target, the scenario (a suite check's only: another
    test's parameter after its target is its own, though it may share a scenario's name) and the check it runs (""
    for a test other than the suite's checks)."""

    target: str
    scenario: str = PLAIN
    check: str = ""

    @property
    def param(self) -> str:
        return target_param(self.target, self.scenario)


def target_test(nodeid: str, targets: Collection[str]) -> TargetTest | None:
    """The target a test's parameter id names, and its scenario; None where it names none of `targets`."""
    params = parameters(nodeid)
    at = next((i for i, p in enumerate(params) if p in targets), None) if params is not None else None
    if params is None or at is None:
        return None
    check = suite_check(nodeid)
    following = params[at + 1] if at + 1 < len(params) and check else PLAIN
    return TargetTest(params[at], following if following in SCENARIOS else PLAIN, check)


# ---- a column ----------------------------------------------------------------------------------------------------
class Column(NamedTuple):
    """A check and its scenario: what a census table's column, and a tester's outcome, is about."""

    check: str
    scenario: str = PLAIN

    def __str__(self) -> str:
        return column(self.check, self.scenario)


def column(check: str, scenario: str = PLAIN) -> str:
    """The column's key: the check, and the scenario where it is not plain."""
    return check if scenario == PLAIN else f"{check}{SCENARIO}{scenario}"


def parse_column(key: str) -> Column:
    check, _, scenario = key.partition(SCENARIO)
    return Column(check, scenario or PLAIN)


# ---- a census item -----------------------------------------------------------------------------------------------
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
        return column(self.check, self.scenario)

    def __str__(self) -> str:
        return f"{self.tester}{PART}{self.name}"


def item_name(check: str, scenario: str = PLAIN) -> str:
    return f"{PREFIX}[{column(check, scenario)}]"


def parse(nodeid: str) -> CensusId | None:
    """The parts of a census item's node id (also as xdist reports it); None for any other test."""
    match = _CENSUS.match(nodeid)
    if match is None:
        return None
    return CensusId(match["tester"], match["check"], match["scenario"] or PLAIN)


def tester_target(module: str, qualname: str) -> str:
    """A tester's name as its reports' target (and a baseline's `target`): `<module stem>::<class>`, the same in every
    checkout (its node id depends on where the checkout is)."""
    return f"{module.rsplit('.', 1)[-1]}{PART}{qualname}"


def short_tester(tester: str) -> str:
    """A tester class's id from its file's name on (`test_wan.py::WanFastTests`), as a table shows it."""
    return tester.rsplit("/", 1)[-1]


def tester_class(tester: str) -> str:
    """A tester id's class name (`WanFastTests` of `tests/pipelines/wan/test_wan.py::WanFastTests`)."""
    return tester.rsplit(PART, 1)[-1]


# ---- an untested class's tester ----------------------------------------------------------------------------------
class UntestedId(NamedTuple):
    """An exported pipeline class no tester names, and the sibling tester whose module and row it is checked under."""

    sibling: str
    pipeline_class: str

    def __str__(self) -> str:
        return untested_tester(self.sibling, self.pipeline_class)


def untested_tester(sibling: str, pipeline_class: str) -> str:
    """The tester id of `pipeline_class` checked through the tester `sibling` (`<module path>::<Sibling>`)."""
    return f"{sibling}{PART}{pipeline_class}"


def untested_target(module: str, sibling: str, pipeline_class: str) -> str:
    """Its reports' target: `<module stem>::<Sibling>::<PipelineClass>`."""
    return untested_tester(tester_target(module, sibling), pipeline_class)


def parse_untested(tester: str) -> UntestedId | None:
    """The parts of an untested class's tester id (or target); None for a tester class's own."""
    parts = tester.split(PART)
    if len(parts) != 3 or not all(parts):
        return None
    return UntestedId(PART.join(parts[:2]), parts[2])


def names_below_file(nodeid: str) -> list[str]:
    """The names of a node id after its file (`[Class, test]` of `m.py::Class::test`); [] for a path alone."""
    return nodeid.split(PART)[1:]


# ---- a coverage key ----------------------------------------------------------------------------------------------
class CoverageKey(NamedTuple):
    """One check of one tester class, as the coverage's reasons name it."""

    tester: str
    column: str

    def __str__(self) -> str:
        return coverage_key(self.tester, self.column)


def coverage_key(tester: str, column: str) -> str:
    return f"{tester}{PART}{column}"


def parse_coverage_key(key: str) -> CoverageKey:
    tester, _, column = key.rpartition(PART)
    return CoverageKey(tester, column)


@dataclass(frozen=True)
class Shard:
    """The `index`-th (from 1) of `count` shards."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(raw: object) -> Shard:
    """`K/N` with 1 <= K <= N <= MOST_SHARDS, in ASCII digits."""
    match = _SHARD.match(str(raw))
    if match is None:
        raise ValueError(f"must be K/N (the K-th of N shards, e.g. 2/8), got {raw!r}")
    index, count = int(match[1]), int(match[2])
    if count < 1 or not 1 <= index <= count:
        raise ValueError(f"must be K/N with 1 <= K <= N, got {raw!r}")
    if count > MOST_SHARDS:
        raise ValueError(f"must be K/N with N at most {MOST_SHARDS}, got {raw!r}")
    return Shard(index, count)
