"""pytest-xdist: one worker per GPU, pinned; one merged report; nothing leaks between workers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests import shared_session
from tests.plugin import worker_env
from tests.shared_session import SharedSession

pytest.importorskip("xdist")

WORKER_ENV = worker_env.writing("CUDA_VISIBLE_DEVICES", tests=4)


@pytest.fixture
def gpus(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    # The controller's view of the GPUs comes from CUDA_VISIBLE_DEVICES when it is set.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    return ["3", "5"]


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory: pytest.TempPathFactory, shared_cache_home: Path) -> SharedSession:
    """Most of these tests need nothing but a two-worker session: one session serves them all. Its three interpreters'
    start (torch imported in each) is what such a test costs, not its assertions."""
    return shared_session.once(tmp_path_factory, "plain-xdist", _plain_run, shared_cache_home)


def _plain_run(root: Path) -> SharedSession:
    # test_first_reports first in collection order: xdist's first handout gives some of its tests to each worker
    modules = {"test_first_reports": MANY_REPORTS, "test_guarded": GUARDED, "test_known": BASELINED,
               "test_threads": THREADS}  # fmt: skip
    for name, source in modules.items():
        (root / f"{name}.py").write_text(source)
    (root / "base.json").write_text(
        '{"schema": "pytest-nosync-baseline/1", "entries": [{"where": "*/lib/a.py:3", "reason": "accepted"}]}'
    )
    args = ["--nosync", "-n", "2", "--nosync-baseline=base.json", "--nosync-report=report.json"]
    return shared_session.run(root, *args, unset=("CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS"))


@pytest.mark.slow
def test_auto_gives_one_worker_per_gpu_each_pinned(pytester: pytest.Pytester, gpus: list[str]) -> None:
    pytester.makepyfile(WORKER_ENV)
    result = pytester.runpytest_subprocess("--nosync", "-n", "auto", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*2 workers*"])
    assert worker_env.seen(pytester) == {"gw0": "3", "gw1": "5"}


@pytest.mark.slow
def test_auto_with_one_gpu_runs_in_this_process(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # one worker would only add its start-up, and xdist runs trace graph checks without helpers
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    pytester.makepyfile("import os\n\ndef test_here():\n    assert 'PYTEST_XDIST_WORKER' not in os.environ\n")
    result = pytester.runpytest_subprocess("--nosync", "-n", "auto", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "workers" not in result.stdout.str()


@pytest.mark.slow
def test_more_workers_than_gpus_is_a_usage_error(pytester: pytest.Pytester, gpus: list[str]) -> None:
    pytester.makepyfile(WORKER_ENV)
    result = pytester.runpytest_subprocess("--nosync", "-n", "3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*-n 3 asks for more workers than the 2 visible GPU(s)*"])


@pytest.mark.slow
def test_sharing_gpus_is_opt_in_and_round_robin(pytester: pytest.Pytester, gpus: list[str]) -> None:
    pytester.makepyfile(worker_env.writing("CUDA_VISIBLE_DEVICES", tests=12))
    result = pytester.runpytest_subprocess("--nosync", "-n", "3", "--nosync-share-gpus", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=12)
    assert worker_env.seen(pytester) == {"gw0": "3", "gw1": "5", "gw2": "3"}


# A conftest that, like diffusers' tests/conftest.py, initialises CUDA as it loads (there: testing_utils asks
# torch.cuda.is_available() on import): what it saw is what CUDA saw, for the whole process.
CONFTEST_SEES = """
import os, pathlib
seen = os.environ.get("CUDA_VISIBLE_DEVICES", "-")
if {cuda}:
    import torch
    torch.cuda.is_available()
pathlib.Path(os.environ.get("PYTEST_XDIST_WORKER", "main") + ".at-load").write_text(seen)
"""

GPU_OF_EACH_WORKER = """
import os, pathlib, pytest, torch

@pytest.mark.parametrize("i", range(4))
def test_which_gpu(i):
    worker = os.environ["PYTEST_XDIST_WORKER"]
    pathlib.Path(f"{worker}-{i}.gpu").write_text(str(torch.cuda.get_device_properties(0).uuid))
"""


@pytest.mark.slow
def test_a_worker_has_its_gpu_before_conftests_load(pytester: pytest.Pytester, gpus: list[str]) -> None:
    pytester.makeconftest(CONFTEST_SEES.format(cuda=False))
    pytester.makepyfile(WORKER_ENV)
    result = pytester.runpytest_subprocess("--nosync", "-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    at_load = {f.stem: f.read_text() for f in pytester.path.glob("gw*.at-load")}
    assert at_load == {"gw0": "3", "gw1": "5"} == worker_env.seen(pytester)


@pytest.mark.slow
@pytest.mark.gpu
def test_on_gpus_each_worker_runs_on_its_own_even_where_a_conftest_initialised_cuda(
    pytester: pytest.Pytester,
) -> None:
    from pytest_nosync.detection import devices

    if not devices.cuda_available():
        pytest.skip(devices.CUDA_ONLY)
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs visible to this process: run it without -n on a 2+ GPU runner")
    pytester.makeconftest(CONFTEST_SEES.format(cuda=True))
    pytester.makepyfile(GPU_OF_EACH_WORKER)
    result = pytester.runpytest_subprocess("--nosync", "-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    gpu_of = worker_env.seen(pytester, "gpu")
    assert len(gpu_of) == 2 and len(set(gpu_of.values())) == 2, gpu_of


MANY_REPORTS = """
import os, pytest
from pytest_nosync.findings import Finding, Report
from pytest_nosync.policy import Policy, judge

@pytest.mark.parametrize("i", range(6))
def test_report(i, nosync):
    findings, passed = judge([Finding("dtoh_sync", f"/src/test_{i}.py:{i + 1}", step=1)], Policy())
    nosync.add_report(Report(findings=findings, check="syncs", target=os.environ["PYTEST_XDIST_WORKER"],
                             passed=passed, scenario="first_block_cache" if i % 2 else "plain"))
"""


@pytest.mark.slow
def test_one_merged_report_without_loss_or_duplicates(plain_run: SharedSession) -> None:
    assert plain_run.outcomes(" test_first_reports.py::") == {"failed": 6}
    doc = json.loads((plain_run.path / "report.json").read_text())
    ids = [t["test_id"] for t in doc["tests"] if t["test_id"].startswith("test_first_reports.py")]
    assert ids == sorted(ids) and len(ids) == 6
    # Each test carries exactly its own finding: nothing leaked from another test or worker.
    for test in doc["tests"]:
        if test["test_id"].startswith("test_first_reports.py"):
            i = int(test["test_id"].split("[")[1].rstrip("]"))
            assert [f["where"] for f in test["findings"]] == [f"/src/test_{i}.py:{i + 1}"]
    assert {t["target"] for t in doc["tests"] if t["test_id"].startswith("test_first_reports.py")} == {"gw0", "gw1"}
    assert plain_run.result.stdout.str().count("FAIL test_first_reports.py") == 6


GUARDED = """
import pytest, torch

ORIGINAL = torch.nn.Module.named_modules

@pytest.mark.parametrize("i", range(8))
def test_guarded(i, nosync):
    with nosync.guard(checks=("host_overhead",)) as g:
        for _ in range(2):  # walks are judged after a first step
            with g.step():
                assert torch.nn.Module.named_modules is not ORIGINAL
                if i % 2:
                    raise RuntimeError("boom")

@pytest.mark.parametrize("i", range(8))
def test_unguarded(i):
    assert torch.nn.Module.named_modules is ORIGINAL
"""


@pytest.mark.slow
def test_detection_state_is_per_process(plain_run: SharedSession) -> None:
    assert plain_run.outcomes(" test_guarded.py::") == {"passed": 12, "failed": 4}


BASELINED = """
from pytest_nosync.findings import Finding, Report
from pytest_nosync.policy import Policy, judge
import pytest

@pytest.mark.parametrize("i", range(4))
def test_known(i, nosync, nosync_guard_kwargs):
    known = nosync_guard_kwargs("syncs", "demo")["options"].known
    findings, passed = judge([Finding("dtoh_sync", "/x/site-packages/lib/a.py:3", step=1)], Policy(), known)
    nosync.add_report(Report(findings=findings, check="syncs", target="demo", passed=passed))
"""


@pytest.mark.slow
def test_workers_use_the_controllers_baseline(plain_run: SharedSession) -> None:
    assert plain_run.outcomes(" test_known.py::") == {"passed": 4}
    doc = json.loads((plain_run.path / "report.json").read_text())
    known = [t for t in doc["tests"] if t["test_id"].startswith("test_known.py")]
    assert len(known) == 4 and {t["metrics"]["baseline"] for t in known} == {str(plain_run.path / "base.json")}


def test_target_groups_are_scheduled_longest_first(pytester: pytest.Pytester) -> None:
    from pytest_nosync.plugin.xdist import longest_first

    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.parametrize("t", [pytest.param(n, marks=pytest.mark.xdist_group(n)) for n in "abc"])
        def test_check(t):
            pass

        def test_ungrouped():
            pass
        """
    )
    items, _ = pytester.inline_genitems()
    ordered = longest_first(items, {"a": 1.0, "b": 9.5, "c": 3.0})
    assert [i.name for i in ordered] == ["test_check[b]", "test_check[c]", "test_check[a]", "test_ungrouped"]
    assert [i.name for i in longest_first(items, {})] == [i.name for i in items]  # no costs yet: as collected


@pytest.mark.parametrize(
    ("nodeid", "group"),
    [
        ("t.py::C::nosync[syncs]@t.py::C", "t.py::C"),  # where xdist could add its suffix (pytest < 9.2)
        ("t.py::C::nosync[syncs]", "t.py::C"),  # where it could not: a tester's checks share their class
        ("suite/test_targets.py::test_syncs[wan]", "wan"),  # a built-in target's tests share the target
        ("suite/test_regressions.py::test_cache[flux-no_cache]", "flux"),
        ("suite/test_regressions.py::test_cache[flux-first_block_cache]", "flux"),  # its own parameter, no scenario
        # a scenario's pipeline is built for it: its checks are a unit, so a target's scenarios spread over workers
        ("suite/test_targets.py::test_syncs[flux-first_block_cache]", "flux-first_block_cache"),
        ("suite/test_targets.py::test_walks[flux-first_block_cache]@flux-first_block_cache", "flux-first_block_cache"),
        ("t.py::test_x[first_block_cache]", "t.py::test_x[first_block_cache]"),  # anything else: its own unit
        ("t.py::test_at[a@b]", "t.py::test_at[a@b]"),  # an "@" of the test's own parameter is no group
    ],
)
def test_loadgroup_units_do_not_depend_on_xdist_rewriting_node_ids(nodeid: str, group: str) -> None:
    from pytest_nosync.plugin.xdist import group_of

    assert group_of(nodeid, ["flux", "wan"]) == group


@pytest.mark.slow
def test_a_run_stores_the_seconds_of_each_target_for_the_next(plain_run: SharedSession) -> None:
    costs = json.loads((plain_run.path / ".pytest_cache" / "v" / "nosync" / "seconds_per_target").read_text())
    # keyed by the work unit its tests were scheduled in: a target's plain tests, each scenario of it
    many = {k for k in costs if k.startswith("gw")}  # test_first_reports.py's targets are the workers
    assert many <= {"gw0", "gw1", "gw0-first_block_cache", "gw1-first_block_cache"}, costs
    assert {k.split("-")[0] for k in many} == {"gw0", "gw1"} and any(k.endswith("first_block_cache") for k in many)
    assert "demo" in costs and all(seconds >= 0 for seconds in costs.values())


THREADS = """
import os, subprocess, sys, torch

def test_threads(tmp_path_factory):
    root = tmp_path_factory.getbasetemp().parent.parent
    (root / f"{os.environ['PYTEST_XDIST_WORKER']}.threads").write_text(str(torch.get_num_threads()))

def test_threads_of_a_process_it_starts(tmp_path_factory):
    root = tmp_path_factory.getbasetemp().parent.parent
    child = [sys.executable, "-c", "import torch; print(torch.get_num_threads())"]
    threads = subprocess.run(child, capture_output=True, text=True, check=True).stdout.strip()
    (root / f"{os.environ['PYTEST_XDIST_WORKER']}.child-threads").write_text(threads)
"""


@pytest.mark.slow
def test_workers_share_the_cores(plain_run: SharedSession) -> None:
    # Every worker starting a thread per core oversubscribes the machine N times over: two workers, half each.
    # And so do the processes its tests start (a subprocess's own torch would take every core again).
    assert plain_run.outcomes(" test_threads.py::") == {"passed": 2}
    share = str(max(1, (os.cpu_count() or 1) // 2))
    assert {f.read_text() for f in plain_run.path.rglob("gw*.threads")} == {share}
    assert {f.read_text() for f in plain_run.path.rglob("gw*.child-threads")} == {share}


@pytest.mark.slow
def test_workers_keep_the_threads_omp_num_threads_says(pytester: pytest.Pytester, monkeypatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # one worker: the cores rule would give it every core
    pytester.makepyfile(THREADS)
    pytester.runpytest_subprocess("--nosync", "-n", "1", "-p", "no:cacheprovider").assert_outcomes(passed=2)
    assert {f.read_text() for f in pytester.path.glob("gw*.threads")} == {"1"}
    assert {f.read_text() for f in pytester.path.glob("gw*.child-threads")} == {"1"}


def test_every_suite_test_is_scheduled_in_the_unit_its_marker_names(pytester: pytest.Pytester) -> None:
    """Under pytest 9.2 xdist cannot tell its scheduler a test's group, so `group_of` reads it from the id: for every
    test the suite collects, with every scenario, it must name the group the test's marker gives (a regression case's
    own `first_block_cache` parameter was once read as the scenario, and its target's plain pipeline built twice)."""
    from pytest_nosync.plugin.xdist import group_of
    from pytest_nosync.suite.targets.registry import TARGETS

    args = ("--nosync", "--nosync-suite", "--nosync-scenarios=all", "-p", "no:cacheprovider")
    items, _ = pytester.inline_genitems(*args)
    grouped = [(item.nodeid, item.get_closest_marker("xdist_group")) for item in items]
    assert len(grouped) > 600, len(grouped)  # 6 targets × 20 scenarios × the checks, and the regression cases
    wrong = [(nodeid, marker.args[0], group_of(nodeid, TARGETS)) for nodeid, marker in grouped
             if marker is not None and group_of(nodeid, TARGETS) != marker.args[0]]  # fmt: skip
    assert not wrong, wrong[:5]


CRASHING_UNIT = """
import os, time, pytest

@pytest.mark.parametrize("group", ["a", "b", "c"])
@pytest.mark.parametrize("i", range(6))
def test_unit(group, i):
    time.sleep(0.1)
    if (group, i) == ("a", 1):
        os._exit(1)  # the worker dies here, as one the OOM killer takes
"""


@pytest.mark.slow
def test_a_crashed_worker_fails_its_test_once_and_the_run_ends(pytester: pytest.Pytester, gpus: list[str]) -> None:
    """Under --dist loadgroup, xdist ran the test a worker crashed on again (crashing the replacement too) and put the
    units the worker had finished back as empty ones, so the run waited at its end with every worker idle: an emulated
    census whose worker the OOM killer took never ended."""
    pytester.makepyfile(CRASHING_UNIT)  # each test a unit of the project's loadgroup scheduler (group_of)
    args = ("--nosync", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider")
    result = pytester.runpytest_subprocess(*args, timeout=120)
    result.assert_outcomes(passed=17, failed=1)
    result.stdout.fnmatch_lines(["*worker 'gw*' crashed while running '*test_unit[[]1-a[]]'*"])


def test_a_worker_that_cannot_run_the_controllers_backend_is_a_usage_error_not_an_emulated_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bug twin: a worker pinned to a GPU its driver does not know (an MPS daemon's renumbering) resolved `auto` for
    itself and emulated, under a controller's header saying cuda. It takes the controller's backend now."""
    from pytest_nosync.detection import devices
    from pytest_nosync.option_table import Settings
    from pytest_nosync.plugin import usage

    monkeypatch.setattr(devices, "_cuda_is_available", lambda: False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2")
    with pytest.raises(pytest.UsageError) as raised:
        usage.resolve_backend(Settings(), controllers="cuda")
    assert str(raised.value).startswith("--nosync: this xdist worker cannot run the backend its controller chose (cuda")
    assert "CUDA_VISIBLE_DEVICES='2'" in str(raised.value) and "\n" not in str(raised.value)
    assert usage.resolve_backend(Settings(), controllers="emulate") == "emulate"  # the clean twin


UNREACHABLE_CONTROLLER = """
import pytest

@pytest.hookimpl(trylast=True)
def pytest_configure_node(node):
    node.workerinput["nosync_backend"] = "cuda"  # a controller that resolved cuda, its workers seeing no GPU
"""


@pytest.mark.slow
def test_workers_that_cannot_reach_their_gpu_fail_each_test_with_one_sentence(pytester: pytest.Pytester) -> None:
    """A worker's usage error was a traceback on the controller, and xdist started the worker again, and again: the
    run ended `no tests ran` (exit 5). Each test fails with the sentence now."""
    pytester.makeconftest(UNREACHABLE_CONTROLLER)
    pytester.makepyfile("def test_one():\n    pass\n\ndef test_two():\n    pass\n")
    result = pytester.runpytest_subprocess("--nosync", "-n", "2", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["--nosync: this xdist worker cannot run the backend its controller chose (cuda*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
