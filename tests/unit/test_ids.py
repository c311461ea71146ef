"""The one grammar of every id (pytest_nosync.ids): each kind built and parsed back to the same value, the odd ids
(unittest-style tester classes, xdist's `@group`, targets with underscores, a test's own "@" or "-"), and no id split
by hand anywhere else in the package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pytest_nosync
from pytest_nosync import ids
from pytest_nosync.checks import CHECKS, SUITE_CHECKS
from pytest_nosync.ids import CensusId, Column, CoverageKey, TargetTest
from pytest_nosync.scenarios import PLAIN, SCENARIOS
from pytest_nosync.scenarios import parse as parse_scenarios

TESTER = "tests/pipelines/flux/test_pipeline_flux.py::FluxPipelineFastTests"
TARGETS = ("flux", "flux2_klein", "wan", "ltx2", "qwenimage", "qwenimage_edit")  # underscores, digits


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("check", list(CHECKS))
def test_a_census_id_parses_back_to_its_parts(check: str, scenario: str) -> None:
    item = CensusId(TESTER, check, scenario)
    assert ids.parse(str(item)) == item
    assert ids.parse(ids.with_group(str(item), TESTER)) == item  # as xdist's loadgroup reports it
    assert str(item) == f"{TESTER}::{ids.item_name(check, scenario)}"
    assert ids.parse_column(item.column) == Column(check, scenario)
    assert ids.parse_coverage_key(ids.coverage_key(item.tester, item.column)) == CoverageKey(TESTER, item.column)


def test_census_ids_as_they_are_written() -> None:
    assert ids.item_name("syncs") == "nosync[syncs]"
    assert ids.item_name("syncs", PLAIN) == "nosync[syncs]"
    assert ids.item_name("graph_breaks", "first_block_cache") == "nosync[graph_breaks-first_block_cache]"
    assert CensusId(TESTER, "syncs").column == "syncs"
    assert CensusId(TESTER, "syncs", "lora").column == "syncs-lora"
    # a unittest-style class inside a class, and a tester class's id from its file's name on
    nested = "tests/pipelines/wan/test_wan.py::WanTests::Inner::nosync[alloc_growth-group_offload_block]@x"
    assert ids.parse(nested) == CensusId("tests/pipelines/wan/test_wan.py::WanTests::Inner", "alloc_growth",
                                         "group_offload_block")  # fmt: skip
    assert ids.short_tester(TESTER) == "test_pipeline_flux.py::FluxPipelineFastTests"
    assert ids.short_tester("test_x.py::X") == "test_x.py::X"
    assert ids.tester_target("tests.pipelines.flux.test_pipeline_flux", "FluxTests") == "test_pipeline_flux::FluxTests"


@pytest.mark.parametrize(
    "nodeid",
    [
        "tests/pipelines/flux/test_flux.py::FluxFastTests::test_inference",  # the class's own unittest test
        "tests/pipelines/flux/test_flux.py::FluxFastTests::test_nosync[syncs]",
        "pytest_nosync/suite/test_targets.py::test_syncs[flux-first_block_cache]",
        "t.py::C::nosync[syncs-taylorseer_cache:max_order=2]",  # a scenario's parameters are never in an id
        "nosync[syncs]",  # no tester class
    ],
)
def test_other_ids_are_no_census_ids(nodeid: str) -> None:
    assert ids.parse(nodeid) is None


def test_a_scenario_set_with_parameters_is_named_in_ids_by_its_name() -> None:
    (scenario,) = parse_scenarios("taylorseer_cache:max_order=2")
    assert ids.item_name("syncs", scenario.name) == "nosync[syncs-taylorseer_cache]"
    assert ids.target_param("wan", scenario.name) == "wan-taylorseer_cache"
    assert ids.parse_column(ids.column("syncs", scenario.name)) == Column("syncs", "taylorseer_cache")


def test_columns_and_coverage_keys() -> None:
    assert ids.column("syncs") == "syncs" == str(Column("syncs"))
    assert ids.column("syncs", "mag_cache") == "syncs-mag_cache" == str(Column("syncs", "mag_cache"))
    assert ids.parse_column("host_overhead") == Column("host_overhead", PLAIN)
    assert ids.parse_column("host_overhead-attention_backend_flex") == Column("host_overhead", "attention_backend_flex")
    key = ids.coverage_key("tests/p/test_a.py::A::B", "syncs-lora")
    assert key == "tests/p/test_a.py::A::B::syncs-lora" == str(CoverageKey("tests/p/test_a.py::A::B", "syncs-lora"))
    assert ids.parse_coverage_key(key) == CoverageKey("tests/p/test_a.py::A::B", "syncs-lora")


@pytest.mark.parametrize(
    ("nodeid", "plain", "group"),
    [
        ("t.py::C::nosync[syncs]@t.py::C", "t.py::C::nosync[syncs]", "t.py::C"),
        ("m.py::test_syncs[flux-lora]@flux-lora", "m.py::test_syncs[flux-lora]", "flux-lora"),
        ("m.py::test_syncs[flux]", "m.py::test_syncs[flux]", ""),
        ("t.py::test_at[a@b]", "t.py::test_at[a@b]", ""),  # an "@" of the test's own parameter is no group
        ("t.py::test_at[a@b]@g", "t.py::test_at[a@b]", "g"),
    ],
)
def test_the_xdist_group_suffix(nodeid: str, plain: str, group: str) -> None:
    assert ids.split_group(nodeid) == (plain, group)
    assert ids.plain_nodeid(nodeid) == plain
    if group:
        assert ids.with_group(plain, group) == nodeid


def test_node_id_parts() -> None:
    assert ids.node_path("tests/a/test_b.py::C::test_d[x-y]") == "tests/a/test_b.py"
    assert ids.node_path("tests/a") == "tests/a"
    assert ids.function_name("m.py::C::test_syncs[flux-lora]") == "test_syncs"
    assert ids.function_name("m.py::test_plain") == "test_plain"
    assert ids.parameters("m.py::test_syncs[qwenimage_edit-first_block_cache]") == [
        "qwenimage_edit",
        "first_block_cache",
    ]
    assert ids.parameters("m.py::test_plain") is None


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("target", TARGETS)
def test_a_suite_check_id_parses_back_to_its_target_and_scenario(target: str, scenario: str) -> None:
    for check in SUITE_CHECKS:
        nodeid = f"pytest_nosync/suite/test_targets.py::test_{check}[{ids.target_param(target, scenario)}]"
        assert ids.target_test(nodeid, TARGETS) == TargetTest(target, scenario, check)
        assert ids.target_test(nodeid, TARGETS).param == ids.target_param(target, scenario)


@pytest.mark.parametrize(
    ("nodeid", "test"),
    [
        ("suite/test_targets.py::test_syncs[wan]", TargetTest("wan", PLAIN, "syncs")),
        ("suite/test_targets.py::test_syncs[flux2_klein-first_block_cache]",
         TargetTest("flux2_klein", "first_block_cache", "syncs")),
        # a regression case's own parameter after its target is no scenario, though it shares a scenario's name
        ("suite/test_regressions.py::test_cache[qwenimage_edit-first_block_cache]", TargetTest("qwenimage_edit")),
        ("suite/test_distributed.py::test_context_parallel[flux-ring]", TargetTest("flux")),
        ("suite/test_targets.py::test_syncs[flux-not_a_scenario]", TargetTest("flux", PLAIN, "syncs")),
        ("t.py::test_x[first_block_cache]", None),  # no target among its parameters
        ("t.py::test_x", None),
    ],
)  # fmt: skip
def test_a_target_read_from_a_test_id(nodeid: str, test: TargetTest | None) -> None:
    assert ids.target_test(nodeid, TARGETS) == test


# ---- nobody else splits an id ------------------------------------------------------------------------------------
PACKAGE = Path(pytest_nosync.__file__).parent
SPLITTING = {"split", "rsplit", "partition", "rpartition", "index", "rindex", "find", "rfind"}
SEPARATORS = {ids.PART, ids.GROUP, ids.SCENARIO, "["}  # what an id's parts are joined with
JOINING = {ids.PART, ids.GROUP}  # an f-string with one of these between two values builds an id
# Splits and joins of strings that are no ids: (module, the expression) → what it splits
NOT_IDS = {
    ("policy.py", "want.partition('-')"): "an allow-list entry's step range, `1-3`",
    ("profiling/classify.py", "base[:cut].rsplit('::', 1)"): "a C++ kernel's qualified name, `at::native::...`",
    ("render.py", "f'::error file={rel},line={f.lineno},title=nosync {f.kind}::{_escape(message)}'"):
        "a GitHub annotation",
}  # fmt: skip


def hand_parsed_ids(source: str) -> list[tuple[int, str]]:
    """(line, expression) for each split of a string at an id's separator, each f-string joining values with one, and
    each regex over a census item's name, in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in SPLITTING
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value in SEPARATORS
            )
            or (
                isinstance(node, ast.JoinedStr)
                and any(isinstance(part, ast.Constant) and part.value in JOINING for part in node.values)
            )
            or (isinstance(node, ast.Constant) and isinstance(node.value, str) and f"{ids.PREFIX}\\[" in node.value)
        ):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_module_but_ids_splits_or_joins_an_id() -> None:
    """A new hand-split of an id fails here: build and parse it with pytest_nosync.ids (or, for a string that is no id,
    add it to NOT_IDS with what it is)."""
    found = [
        f"{path.relative_to(PACKAGE)}:{line}: {expression}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != PACKAGE / "ids.py"
        for line, expression in hand_parsed_ids(path.read_text(encoding="utf-8"))
        if (path.relative_to(PACKAGE).as_posix(), expression) not in NOT_IDS
    ]
    assert not found, "\n".join(found)


def test_every_exception_is_still_there() -> None:
    """An entry of NOT_IDS whose expression is gone is stale: remove it."""
    present = {
        (path.relative_to(PACKAGE).as_posix(), expression)
        for path in PACKAGE.rglob("*.py")
        for _, expression in hand_parsed_ids(path.read_text(encoding="utf-8"))
    }
    assert set(NOT_IDS) <= present, set(NOT_IDS) - present


@pytest.mark.parametrize(
    "source",
    [
        'tester, column = where.rsplit("::", 1)',
        'check, _, scenario = column.partition("-")',
        'head, at, group = nodeid.rpartition("@")',
        'params = nodeid[nodeid.rindex("[") + 1 : -1]',
        'key = f"{tester}::{column}"',
        r'ID = re.compile(r"^(?P<tester>.+)::nosync\[(?P<check>\w+)\]$")',
    ],
)
def test_the_finder_finds_a_hand_split(source: str) -> None:
    assert hand_parsed_ids(source)


def test_the_finder_leaves_other_strings_alone() -> None:
    assert not hand_parsed_ids('name, _, value = entry.partition("=")\npath = f"{stem}-{n}.json"')
