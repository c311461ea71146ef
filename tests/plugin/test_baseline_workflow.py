"""The contributor workflow, in real sessions: write a baseline on main, run a branch against it. A branch that
adds a sync fails naming it; one that only moves code passes (the entry says it moved); one that fixes a sync says
which entry to delete; `--nosync-baseline-write` over the baseline rewrites the line hints and keeps the reasons."""

from __future__ import annotations

import json

import pytest

MAIN = """import torch


def step(x):
    return helper(x)


def helper(x):
    y = x * 2
    return y.sum().item()
"""
MOVED = "# a comment added at the top\n# and another\n\n" + MAIN.replace(
    "def step", "def unrelated():\n    pass\n\n\ndef step"
)
ADDED = MAIN.replace("    y = x * 2\n", "    y = x * 2\n    peak = y.max().item()\n")
FIXED = MAIN.replace("    return helper(x)", "    return (x * 2).sum()")  # helper's code stays, nobody calls it
REWRITTEN = MAIN.replace("return y.sum().item()", "return float(y.sum())")
TEST = """
import pytest
import torch

import lib


@pytest.mark.gpu
@pytest.mark.nosync
def test_step(nosync_device):
    lib.step(torch.ones(4, device=nosync_device))
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.syspathinsert()
    pytester.makepyfile(test_lib=TEST)
    return pytester


def _on(project: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    (project.path / "lib.py").write_text(source)
    return project.runpytest("--nosync", "-p", "no:cacheprovider", *args)


MAIN_ENTRY = {
    "kind": "dtoh_sync",
    "file": "lib.py",
    "function": "helper",
    "code": "return y.sum().item()",
    "occurrence": 0,
    "line": 10,
    "check": "syncs",
    "test": "test_lib.py::test_step",
    "reason": "a host read per step, tracked in #1",
    "upstream": "https://example.org/1",
}


def test_a_baseline_written_on_main_names_the_line_by_its_code(project: pytest.Pytester) -> None:
    written = _on(project, MAIN, "--nosync-baseline-write=base.json")
    written.assert_outcomes(passed=1)  # main's sync, recorded in the file: the write run is green
    written.stdout.fnmatch_lines(["nosync: 1 findings written as known to base.json (1 entries; 1 failing test*"])
    (entry,) = json.loads((project.path / "base.json").read_text())["entries"]
    assert {k: v for k, v in entry.items() if k not in ("reason", "upstream", "added", "diffusers")} == {
        k: v for k, v in MAIN_ENTRY.items() if k not in ("reason", "upstream")
    }


@pytest.fixture
def main_baseline(project: pytest.Pytester) -> dict:
    """What the test above writes on main, with the reason and reference a maintainer fills in."""
    doc = {"schema": "pytest-nosync-baseline/2", "entries": [MAIN_ENTRY]}
    (project.path / "base.json").write_text(json.dumps(doc))
    return MAIN_ENTRY


def test_a_branch_that_only_moves_code_passes(project: pytest.Pytester, main_baseline: dict) -> None:
    result = _on(project, MOVED, "--nosync-baseline=base.json")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["MOVED baseline #0 *: dtoh_sync at lib.py:10 in helper*: now at line 17 (recorded at 10)"]
    )


def test_a_branch_that_adds_a_sync_fails_naming_it(project: pytest.Pytester, main_baseline: dict) -> None:
    result = _on(project, ADDED, "--nosync-baseline=base.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*dtoh_sync *lib.py:10*", "      y.max().item()", "*known issues (baseline)*"])


def test_a_branch_that_fixes_a_sync_says_which_entry_to_delete(project: pytest.Pytester, main_baseline: dict) -> None:
    result = _on(project, FIXED, "--nosync-baseline=base.json")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # strict: the entry must go
    result.stdout.fnmatch_lines(["FIXED baseline #0 *: its code is still at line 10 but no longer reported: remove it"])


def test_a_branch_that_rewrites_the_line_makes_the_entry_stale(project: pytest.Pytester, main_baseline: dict) -> None:
    result = _on(project, REWRITTEN, "--nosync-baseline=base.json")
    result.assert_outcomes(failed=1)  # the rewritten line still syncs: a new finding
    result.stdout.fnmatch_lines(["STALE baseline #0 *: its code is gone from the function*"])


def test_writing_over_the_baseline_rewrites_the_hints_and_keeps_the_reasons(
    project: pytest.Pytester, main_baseline: dict
) -> None:
    _on(project, MOVED, "--nosync-baseline=base.json", "--nosync-baseline-write=base.json").assert_outcomes(passed=1)
    (entry,) = json.loads((project.path / "base.json").read_text())["entries"]
    assert entry["line"] == 17
    assert (entry["reason"], entry["upstream"]) == (main_baseline["reason"], main_baseline["upstream"])
    assert _on(project, MOVED, "--nosync-baseline=base.json").stdout.str().count("MOVED") == 0
