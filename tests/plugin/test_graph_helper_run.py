"""The suite's graph checks traced in a helper process, end to end, on a contributor's diffusers checkout.

A copy of the installed diffusers goes first on PYTHONPATH with a graph break planted in the Wan transformer's
forward: the helper imports that copy as the run does, its Wan graph check fails naming the planted line, and the
Flux2 Klein check beside it (untouched code) passes. The same run with `--nosync-graph-workers 0` traces in the run's
own process and names the same line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.plugin.test_contributor_mode import _copy, _edit, _suite

ANCHOR = "        rotary_emb = self.rope(hidden_states)\n"
PLANTED = ANCHOR + "        if hidden_states.float().mean() > -1e30:  # a branch on a tensor value: a graph break\n"
PLANTED += "            hidden_states = hidden_states * 1\n"


@pytest.fixture
def planted_break(tmp_path: Path) -> tuple[Path, str]:
    """(the site with the edited copy, the planted line as `file:line`)."""
    package = _copy(tmp_path / "site")
    path = package / "models/transformers/transformer_wan.py"
    line = _edit(path, ANCHOR, PLANTED) + 1
    return tmp_path / "site", f"{path}:{line}"


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "0"])
def test_a_graph_break_on_a_contributors_checkout_is_named_by_the_helper_and_in_process(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, planted_break: tuple[Path, str], workers: str
) -> None:
    site, planted = planted_break
    report = pytester.path / "report.json"
    result = _suite(
        pytester, monkeypatch, site, "--nosync-targets=wan,flux2_klein", "-k", "test_graph_breaks",
        f"--nosync-graph-workers={workers}", "-rA", f"--nosync-report={report}",
    )  # fmt: skip
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out[-4000:]
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["PASSED *test_graph_breaks[[]flux2_klein[]]", "FAILED *test_graph_breaks[[]wan[]]*"])
    result.stdout.fnmatch_lines([f"*graph_break*{planted}*"])
    traced = "nosync: 2 graph check(s) traced in 1 helper process(es)"
    assert (traced in out) == (workers == "1"), out[-3000:]
    assert "ran in this process instead" not in out
    doc = json.loads(report.read_text())
    helper_s = {t["target"]: t["metrics"].get("helper_s") for t in doc["tests"] if t["check"] == "graph_breaks"}
    if workers == "1":  # the helper's own seconds, which the target's seconds count rather than this process's wait
        assert all(seconds > 0 for seconds in helper_s.values()), helper_s
        assert doc["seconds_per_target"] == {t: round(seconds, 2) for t, seconds in helper_s.items()}
    else:
        assert helper_s == {"wan": None, "flux2_klein": None}


@pytest.mark.parametrize("workers", ["auto", "0"])
def test_graph_checks_run_after_the_other_checks_and_before_step_metrics_when_helpers_may_trace_them(
    pytester: pytest.Pytester, workers: str
) -> None:
    result = pytester.runpytest(
        "-m", "gpu", "--nosync", "--nosync-suite", "-p", "no:cacheprovider", "--collect-only", "-q",
        "--nosync-targets=wan", f"--nosync-graph-workers={workers}", "-k", "test_targets",
    )  # fmt: skip
    names = [line.split("::")[1].split("[")[0] for line in result.stdout.lines if "test_targets.py::" in line]
    checks = ["test_syncs", "test_graph_breaks", "test_alloc_growth", "test_host_overhead", "test_step_metrics"]
    if workers == "auto":
        checks.remove("test_graph_breaks")
        checks.insert(3, "test_graph_breaks")
    assert names == checks, result.stdout.str()
