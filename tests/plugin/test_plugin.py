"""The plugin in real pytest sessions (pytester): options, markers, failing, reporting, restoring."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pytest_nosync.detection import devices
from tests.plugin.repository import ROOT, run_here

FAILING_REPORT = """
from pytest_nosync.findings import Finding, Report
from pytest_nosync.policy import Policy, judge

def make_report(where, phase="step", kind="dtoh_sync"):
    findings, passed = judge([Finding(kind, where, step=0 if phase == "step" else None, phase=phase,
                                      detail="s.item()", hint="keep it a tensor")], Policy())
    return Report(findings=findings, check="syncs", target="demo", passed=passed)
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(reports=FAILING_REPORT)
    pytester.syspathinsert()
    return pytester


def test_help_shows_the_option_group_and_markers(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*pytest-nosync*", "*--nosync *turn the nosync checks on*", "*--nosync-report*"])
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.nosync(*", "@pytest.mark.gpu*"])


def test_plugin_can_be_disabled(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_ok(): pass")
    result = pytester.runpytest("-p", "no:nosync", "--nosync")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result = pytester.runpytest("-p", "no:nosync")
    result.assert_outcomes(passed=1)


def test_bad_marker_argument_is_a_usage_error_naming_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.nosync(budjet=1)
        def test_typo():
            pass
        """
    )
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_typo*unknown argument 'budjet'*"])


@pytest.mark.parametrize("option", ["--nosync-mode=fast", "--nosync-backend=tpu", "--nosync-steps=1"])
def test_bad_option_values_are_usage_errors(pytester: pytest.Pytester, option: str) -> None:
    pytester.makepyfile("def test_ok(): pass")
    result = pytester.runpytest("--nosync", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{option.split('=')[0]}*"])


def test_a_marked_test_without_nosync_does_what_the_readme_says(pytester: pytest.Pytester) -> None:
    """The README said a marked test runs "as a plain test" without --nosync: its example is also marked gpu, which
    skips it where no GPU is visible. A run of the example without --nosync, and the README's and usage page's words."""
    from tests.unit.docs_examples import ROOT, runnable

    (example,) = [e for e in runnable([ROOT / "README.md"]) if e.name == "readme_marker"]
    pytester.makepyfile(test_readme_marker=example.code)
    result = pytester.runpytest("-p", "no:cacheprovider")
    if devices.cuda_available():
        result.assert_outcomes(passed=1)
    else:
        result.assert_outcomes(skipped=1)
        result.stdout.fnmatch_lines(["nosync: 1 check(s) did not run: needs a CUDA device*"])
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "(without, it runs unguarded where a GPU is; `gpu` skips it elsewhere)" in readme
    usage = " ".join((ROOT / "docs" / "usage.md").read_text(encoding="utf-8").split())
    assert "those also marked `gpu` only where a GPU is visible (elsewhere they are skipped" in usage


def test_failing_report_fails_the_test_with_the_place(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        from reports import make_report

        def test_dirty(nosync):
            nosync.add_report(make_report("/src/pipe.py:10"))

        def test_outside_only(nosync):
            nosync.add_report(make_report("/src/pipe.py:20", phase="before_steps"))
        """
    )
    result = project.runpytest("--nosync")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*nosync syncs: 1 finding(s) in target demo*: 1 failing at 1 place(s)",
            "*dtoh_sync*/src/pipe.py:10*step 0 ×1*",
            "*s.item()*",
            "*hint: keep it a tensor*",
            "*= nosync =*",
            "FAIL *test_dirty*",
            "ok   *test_outside_only*1 outside steps*",
        ]
    )


def test_without_nosync_reports_do_not_fail_and_guards_are_disarmed(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        import torch

        def test_plain(nosync):
            assert not nosync.enabled
            with nosync.guard(checks=("host_overhead",)) as g:
                before = torch.nn.Module.named_modules
            assert torch.nn.Module.named_modules is before
            assert nosync.reports == []
        """
    )
    result = project.runpytest()
    result.assert_outcomes(passed=1)
    assert "= nosync =" not in result.stdout.str()


def test_ini_turns_it_on(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nnosync = true\n")
    project.makepyfile("def test_on(nosync):\n    assert nosync.enabled\n")
    project.runpytest().assert_outcomes(passed=1)


def test_json_report_has_environment_and_every_finding(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        from reports import make_report

        def test_a(nosync):
            nosync.add_report(make_report("/src/pipe.py:10"))

        def test_b(nosync):
            nosync.add_report(make_report("/src/pipe.py:20", phase="after_steps"))
        """
    )
    out = project.path / "reports" / "nosync.json"
    project.runpytest("--nosync", f"--nosync-report={out}")
    doc = json.loads(out.read_text())
    assert doc["schema"] == "pytest-nosync/1"
    assert doc["environment"]["torch"]
    assert [t["test_id"].split("::")[-1] for t in doc["tests"]] == ["test_a", "test_b"]
    assert [f["status"] for t in doc["tests"] for f in t["findings"]] == ["fail", "outside_steps"]


def test_a_marked_tests_step_metrics_are_a_row_named_by_the_test(pytester: pytest.Pytester) -> None:
    """A marked test's step metrics were a table titled "(None, None)" over a row without a name or a number."""
    pytester.makepyfile(
        test_loop="""
        import pytest
        import torch

        @pytest.fixture
        def latents(nosync_device):
            return torch.ones(64, device=nosync_device)

        @pytest.mark.gpu
        @pytest.mark.nosync(checks=["step_metrics", "device_ops"])
        def test_loop(latents):
            for _ in range(3):
                latents = latents * 0.5 + 1.0
        """
    )
    result = pytester.runpytest("--nosync")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "step metrics of guarded tests, the mean per step (*):",
            "  test  * steps  device ops   host ms  device ms  peak MiB",
            "  test_loop.py::test_loop  * 1           6 * [0-9].[0-9][0-9] * 0.00",
        ]
    )
    assert "None" not in result.stdout.str()


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--nosync-report=dir", "--nosync-report: dir is a directory; give a file name such as dir/nosync-report.json"),
        ("--nosync-report=afile/r.json", "--nosync-report: cannot write afile/r.json: afile is a file"),
        ("--nosync-baseline-write=dir", "--nosync-baseline-write: dir is a directory; * dir/nosync-baseline.json"),
        ("--nosync-baseline-write=afile/b.json", "--nosync-baseline-write: cannot write afile/b.json: afile is a file"),
        ("--nosync-baseline=missing.json", "--nosync-baseline: baseline missing.json does not exist *"),
        ("--nosync-baseline=dir", "--nosync-baseline: baseline dir is a directory, not a baseline file"),
        ("--nosync-baseline=afile", "--nosync-baseline: baseline afile is not valid JSON: *"),
        ("--nosync-baseline=entries.json", "--nosync-baseline: baseline entries.json: 'entries' must be a list*"),
        ("--nosync-trace-dir=afile", "--nosync-trace-dir: cannot write traces to afile: afile is a file, *"),
        ("--nosync-trace-dir=afile/t", "--nosync-trace-dir: cannot write traces to afile/t: afile is a file, *"),
        ("--nosync-mode=nope", "--nosync-mode: must be 'warn' or 'error', got 'nope'"),  # not `<Mode.WARN: 'warn'>`
    ],
)
def test_a_bad_path_is_one_sentence_before_any_test_runs(pytester: pytest.Pytester, option: str, message: str) -> None:
    pytester.makepyfile("def test_ran(): open('ran', 'w').close()")
    (pytester.path / "afile").write_text("")
    (pytester.path / "dir").mkdir()
    (pytester.path / "entries.json").write_text('{"schema": "pytest-nosync-baseline/2", "entries": 5}')
    result = pytester.runpytest("--nosync", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert not (pytester.path / "ran").exists()
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "INTERNALERROR" not in output
    assert len([line for line in result.stderr.lines if line.strip()]) == 1, result.stderr.str()
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="Linux's /proc: a file whose read fails")
def test_a_baseline_that_cannot_be_read_is_one_sentence(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_ok(): pass")
    result = pytester.runpytest("--nosync", "--nosync-baseline=/proc/self/mem")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --nosync-baseline: baseline /proc/self/mem cannot be read: *"])


def test_github_annotations_under_actions(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    project.makepyfile(
        """
        import os
        from reports import make_report

        def test_dirty(nosync):
            nosync.add_report(make_report(os.path.join(os.getcwd(), "pipe.py") + ":10"))
        """
    )
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = project.runpytest("--nosync")
    result.stdout.fnmatch_lines(["::error file=pipe.py,line=10,title=nosync dtoh_sync::*"])


def test_gpu_tests_skip_with_a_sentence_without_cuda(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.gpu
        def test_needs_gpu():
            pass
        """
    )

    if devices.cuda_available():
        pytest.skip("this machine has CUDA")
    result = pytester.runpytest("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*needs a CUDA device: run `pytest -m gpu --nosync` on a GPU runner*"])


def test_state_is_restored_when_the_test_body_raises(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        import torch
        from torch.utils._python_dispatch import _get_current_dispatch_mode

        ORIGINAL = torch.nn.Module.named_modules

        @pytest.mark.nosync(checks=["host_overhead", "alloc_growth"], alloc_sites=True)
        def test_raises():
            assert torch.nn.Module.named_modules is not ORIGINAL  # armed
            assert _get_current_dispatch_mode() is not None
            raise ValueError("boom")

        def test_after():
            assert torch.nn.Module.named_modules is ORIGINAL
            assert _get_current_dispatch_mode() is None
        """
    )
    result = pytester.runpytest("--nosync", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*ValueError: boom*"])


def test_emulation_banner_says_what_it_cannot_see(pytester: pytest.Pytester) -> None:

    if devices.cuda_available():
        pytest.skip("this machine has CUDA: auto picks it")
    pytester.makepyfile("def test_ok(): pass")
    result = pytester.runpytest("--nosync")
    result.stdout.fnmatch_lines(["nosync: backend emulate*", "nosync: no GPU here, so syncs are emulated*not*"])


def test_suite_option_collects_the_built_in_suite(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--nosync", "--nosync-suite", "--collect-only", "-q", "--nosync-targets=flux,wan")
    out = result.stdout.str()
    assert "test_targets.py::test_syncs[flux]" in out
    assert "test_syncs[wan]" in out and "test_syncs[ltx2]" not in out
    assert "test_unipc_steps_are_sync_free[order2-bh2-flow-x0on-correctoron]" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nosync-targets=flux,nope"], "unknown target 'nope'"),
        (["--nosync-checkpoint=wan"], "NAME=PATH"),
        (["--nosync-dtype=int8"], "--nosync-dtype"),
    ],
)
def test_suite_options_are_validated(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    result = pytester.runpytest("--nosync", "--nosync-suite", "--collect-only", *args)
    assert result.ret in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERRUPTED)
    assert message in result.stdout.str() + result.stderr.str()


def test_a_run_without_xdist_warns_of_no_marker_of_ours(pytester: pytest.Pytester) -> None:
    """Every run without pytest-xdist warned `PytestUnknownMarkWarning: xdist_group` (the suite's tests carry it)."""
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.gpu
        @pytest.mark.xdist_group("flux")
        @pytest.mark.nosync(checks=["syncs"])
        def test_grouped():
            pass
        """
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:xdist", "-p", "no:cacheprovider", "-W", "error::pytest.PytestWarning"
    )
    result.assert_outcomes(passed=1) if devices.cuda_available() else result.assert_outcomes(skipped=1)


@pytest.mark.slow  # a process that imports every test module of this repository
def test_this_repositorys_tests_collect_without_xdist_and_without_warnings() -> None:
    done = run_here("--nosync", "--collect-only", "-p", "no:xdist", "-W", "error::pytest.PytestWarning")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_a_run_without_nosync_does_not_import_torch(pytester: pytest.Pytester) -> None:
    # The plugin is loaded in every pytest run of an environment that has it: a run that checks nothing (a test that
    # only carries the marker too) pays neither torch's import (~1.2 s on a CPU) nor diffusers'.
    pytester.makepyfile(
        """
        import sys

        import pytest

        @pytest.mark.nosync
        def test_plain():
            assert "torch" not in sys.modules, "imported"
            assert "diffusers" not in sys.modules, "imported"
        """
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    checking = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--nosync", "--nosync-backend=emulate")
    checking.assert_outcomes(failed=1)  # the assertion can fail: a checking run imports torch
    checking.stdout.fnmatch_lines(["*AssertionError: imported*"])


@pytest.mark.parametrize(
    ("module", "imports_torch"),
    [
        ("pytest_nosync.plugin.start", False),  # what a checking run imports before its options are checked
        ("pytest_nosync.detection.devices", True),  # the twin: the probe sees a module that imports torch
    ],
)
def test_a_checking_runs_usage_error_comes_before_torchs_import(module: str, imports_torch: bool) -> None:
    # A usage error (one sentence, exit 4) is answered before torch's seconds of imports: plugin.start and all its
    # module-level imports do without torch; what needs it is imported once the options passed.
    probe = f"import sys, {module}; print('torch' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(imports_torch)


# Without --nosync the plugin loads what registers its options and markers and validates the markers, nothing else.
OFF_MODULES = {
    "pytest_nosync",
    "pytest_nosync.plugin",
    "pytest_nosync.plugin.options",
    "pytest_nosync.option_table",
    "pytest_nosync.checks",
    "pytest_nosync.findings",
    "pytest_nosync.profiling",
    "pytest_nosync.profiling.config",
    "pytest_nosync.policy",  # parses the marker's allow-list
}


def test_a_run_without_nosync_loads_only_the_option_table(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import json, sys

        import pytest

        @pytest.mark.nosync(checks=["syncs"], allow=[("x.py:1", "a reason")])
        def test_plain():
            loaded = sorted(m for m in sys.modules if m.startswith("pytest_nosync"))
            print("LOADED=" + json.dumps(loaded))
        """
    )

    def loaded(*args: str) -> set[str]:
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s", *args)
        line = next(line for line in result.outlines if "LOADED=" in line)
        return set(json.loads(line.split("LOADED=", 1)[1]))

    assert loaded() == OFF_MODULES
    assert loaded("--nosync", "--nosync-backend=emulate") > OFF_MODULES | {"pytest_nosync.plugin.session"}
