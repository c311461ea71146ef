"""Failure text, GitHub annotations and the run's JSON document."""

from __future__ import annotations

import json
import os
import sys

import pytest
import torch

from pytest_nosync import nosync_guard, run_report
from pytest_nosync.detection import devices
from pytest_nosync.findings import Finding, Frame, Phase, Report, merge
from pytest_nosync.policy import Policy, judge
from pytest_nosync.render import github_annotations, render_report


def _report(root: str) -> Report:
    pipe = os.path.join(root, "src/pipe.py")
    findings = [
        Finding(
            "dtoh_sync",
            f"{pipe}:10",
            (Frame(pipe, 10, "step", "s.item()"),),
            0,
            Phase.IN_STEP,
            "scheduler_step",
            1,
            "hint: keep it a tensor",
            "s.item()",
            "sync_debug",
        ),
        Finding("dtoh_sync", f"{pipe}:10", (), 1, Phase.IN_STEP, "scheduler_step", 1, "hint", "s.item()", "sync_debug"),
        Finding("dtoh_sync", f"{pipe}:10", (), 1, Phase.IN_STEP, "scheduler_step", 1, "hint", "s.item()", "sync_debug"),
        Finding("htod_sync", f"{pipe}:30", (), None, Phase.AFTER_STEPS, None, 1, "", "torch.tensor(x)", "sync_debug"),
    ]
    judged, passed = judge(merge(findings), Policy())
    return Report(
        findings=judged, test_id="tests/test_x.py::test_y", check="syncs", target="flux", backend="cuda", passed=passed
    )


def test_merge_counts_repeats_per_step() -> None:
    report = _report("/r")
    assert [(f.step, f.count) for f in report.findings] == [(0, 1), (1, 2), (None, 1)]


def test_failure_text_groups_by_place_with_counts_per_step(tmp_path) -> None:
    text = render_report(_report(str(tmp_path)), root=str(tmp_path))
    head = "nosync syncs: 3 finding(s) in target flux [cuda]: 2 failing (3 events) at 1 place(s), 1 outside the steps"
    assert text.splitlines()[0] == head
    assert "src/pipe.py:10  — step 0 ×1, step 1 ×2  [scheduler_step]" in text
    assert "s.item()" in text and "hint:" in text
    assert "outside the denoising steps" in text and "src/pipe.py:30" in text


def test_the_head_counts_every_finding_of_a_guarded_block(backend: str, device: torch.device) -> None:
    """The head counted the failing findings only: "4 finding(s)" over a report that held 5."""
    x = torch.randn(8, device=device)
    with nosync_guard(backend=backend, checks=("syncs",)) as g:
        float(x.sum())  # before the first step: reported, not counted
        for _ in range(4):
            with g.step():
                x = x.tanh()
                for _ in range(2):
                    float(x.sum())  # twice in each step: one finding per step, counted twice
    assert [(f.status, f.count) for f in g.report.findings] == [("outside_steps", 1)] + [("fail", 2)] * 4
    head = render_report(g.report).splitlines()[0]
    assert head == f"nosync syncs: 5 finding(s) [{backend}]: 4 failing (8 events) at 1 place(s), 1 outside the steps"


def test_github_annotations_only_for_failing_findings_in_the_repo(tmp_path) -> None:
    report = _report(str(tmp_path))
    outside = Finding("dtoh_sync", "/elsewhere/lib.py:3", status="fail")
    report.findings.append(outside)
    lines = github_annotations([report], str(tmp_path))
    assert lines == [
        "::error file=src/pipe.py,line=10,title=nosync dtoh_sync::dtoh_sync in tests/test_x.py::test_y: "
        "s.item(). hint: keep it a tensor"
    ]


def test_environment_travels_between_xdist_processes() -> None:
    """A worker sends its reports (step metrics carry the environment) through execnet, which refuses str subclasses
    such as torch's TorchVersion: the run stopped with an INTERNALERROR under -n."""
    execnet = pytest.importorskip("execnet", reason="execnet comes with pytest-xdist")
    env = devices.environment("emulate")
    assert execnet.loads(execnet.dumps(env)) == env


def test_json_document_round_trips(tmp_path) -> None:
    report = _report(str(tmp_path))
    path = tmp_path / "out" / "report.json"
    run_report.check_writable(str(path))
    run_report.write(str(path), run_report.document([report], devices.environment("cuda")))
    doc = json.loads(path.read_text())
    assert doc["schema"] == "pytest-nosync/1"
    assert set(doc["environment"]) >= {"torch", "cuda", "diffusers", "device", "backend", "python"}
    assert doc["summary"] == {"tests": 1, "failed": 1, "findings_by_status": {"fail": 3, "outside_steps": 1}}
    test = doc["tests"][0]
    assert set(test) >= {"test_id", "check", "target", "backend", "passed", "findings", "metrics"}
    finding = test["findings"][0]
    assert set(finding) >= {"kind", "where", "stack", "step", "phase", "region", "count", "hint", "status"}
    _, reports = run_report.read(str(path))
    assert reports[0].findings == report.findings


def test_unwritable_report_path_is_a_sentence(tmp_path) -> None:
    with pytest.raises(OSError, match="is a directory"):
        run_report.check_writable(str(tmp_path))
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OSError, match=r"cannot write .*report\.json: .*file is a file"):
        run_report.check_writable(str(blocker / "report.json"))
    run_report.check_writable(str(tmp_path / "new" / "dir" / "report.json"))  # creatable: fine, and not created
    assert not (tmp_path / "new").exists()


def test_the_diffusers_under_test_is_the_one_found_first_with_its_own_version(tmp_path, monkeypatch) -> None:
    # a checkout on the path before an installed release: its version is its source's, not the release's metadata
    checkout = tmp_path / "branch" / "diffusers"
    checkout.mkdir(parents=True)
    (checkout / "__init__.py").write_text('__version__ = "0.99.0.dev0"\n')
    monkeypatch.delitem(sys.modules, "diffusers", raising=False)  # not imported yet: found, never imported
    monkeypatch.syspath_prepend(str(tmp_path / "branch"))
    assert run_report.diffusers_version() == "0.99.0.dev0"
    assert run_report.diffusers_location() == str(checkout)
    assert "diffusers" not in sys.modules
    env = devices.environment("emulate")
    assert (env["diffusers"], env["diffusers_path"]) == ("0.99.0.dev0", str(checkout))


def test_a_report_named_gz_is_written_compressed_and_read_back(tmp_path) -> None:
    """A census of every scenario keeps 44k findings with their stacks (115 MB of JSON on the H100): `.json.gz`."""
    import gzip

    report = _report(str(tmp_path))
    path = tmp_path / "report.json.gz"
    run_report.write(str(path), run_report.document([report], devices.environment("cuda")))
    assert json.loads(gzip.decompress(path.read_bytes()))["schema"] == "pytest-nosync/1"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("report")] == ["report.json.gz"]  # no leftover
    _, reports = run_report.read(str(path))
    assert reports[0].findings == report.findings
    plain = tmp_path / "plain.json.gz"
    plain.write_text("{}")  # named .gz, not compressed: an OSError, which the CLI says in one sentence
    with pytest.raises(OSError):
        run_report.read(str(plain))
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(path.read_bytes()[:-40])  # cut short (a copy interrupted): gzip says EOFError, read an OSError
    with pytest.raises(OSError, match="damaged gzip"):
        run_report.read(str(cut))
