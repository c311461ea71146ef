"""`python -m pytest_nosync profile|diagnose` on the CPU, with the stand-in pipeline as the target."""

from __future__ import annotations

import getpass
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_nosync.cli import main
from pytest_nosync.profiling.export import fresh_private_dir
from pytest_nosync.profiling.trace import Trace
from pytest_nosync.suite.targets.base import CallContext, Target

from .tiny_pipeline import TinyPipeline

DATA = Path(__file__).parent / "data"


def _call_kwargs(pipe: Any, ctx: CallContext) -> dict[str, Any]:
    return {"prompt": "a cat", "num_inference_steps": ctx.steps}


TINY = Target(
    name="tiny",
    pipeline_class="TinyPipeline",
    checkpoint="",
    build_components=dict,
    call_kwargs=_call_kwargs,
    text_encoding="a zero embedding",
)
BUILT: list[TinyPipeline] = []


def _build(target: Target, device: torch.device, dtype: torch.dtype, checkpoint: str | None = None) -> TinyPipeline:
    pipe = TinyPipeline(str(device), dtype)
    pipe.scheduler.stall = {1: 0.02}
    BUILT.append(pipe)
    return pipe


def _main(*argv: str) -> int:
    return main(list(argv), targets={"tiny": TINY}, build=_build)


def test_profile_eager_writes_the_trace_and_prints_the_diagnosis(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "tiny.json"
    assert _main("profile", "--target", "tiny", "--steps", "3", "--out", str(out), "--with-stack") == 0
    text = capsys.readouterr().out
    assert "trace diagnosis: 3 step(s), CPU only" in text
    assert "<built-in function sleep> in slow_host_work()" in text
    assert f"trace: {out} (open it in Perfetto)" in text
    trace = Trace.load(str(out))
    assert [s[2] for s in trace.step_ranges()] == [0, 1, 2]
    assert BUILT[-1].scheduler.calls == 3  # the profiled call (after one warm-up call)


def test_profile_compile_mode_compiles_the_denoiser(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "tiny-compile.json.gz"
    argv = ("profile", "--target", "tiny", "--mode", "compile", "--backend", "eager", "--device", "cpu")
    rc = _main(*argv, "--out", str(out))  # the plain CPU: dynamo cannot compile for the emulated device
    assert rc == 0
    assert isinstance(BUILT[-1].transformer, torch._dynamo.eval_frame.OptimizedModule)
    trace = Trace.load(str(out))
    assert any(e.name.startswith("Torch-Compiled Region") for e in trace.of("cpu_op"))
    regions = [r.name for r in trace.region_ranges()]
    assert regions.count("nosync::region::transformer_forward") == 2  # hooks on the wrapper still fire
    assert "trace diagnosis: 2 step(s)" in capsys.readouterr().out


def test_budget_exceeded_exits_1_with_the_finding(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "t.json"
    argv = ("profile", "--target", "tiny", "--steps", "3", "--out", str(out), "--with-stack")
    assert _main(*argv, "--budget", "max_cpu_ms_between_denoiser_calls=10", "--json", str(tmp_path / "d.json")) == 1
    err = capsys.readouterr().err
    assert "host_overhead tests/profiling/tiny_pipeline.py:22  — step 1 ×1  [scheduler_step]" in err
    assert json.loads((tmp_path / "d.json").read_text())["steps"][1]["max_ms_between_denoiser_calls"] > 10


def test_profile_without_out_writes_to_a_new_private_temporary_directory_it_prints(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not the working directory: a command run anywhere leaves nothing there."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    assert _main("profile", "--target", "tiny", "--warmup", "0") == 0
    out = capsys.readouterr().out
    directory = Path(re.search(r"^outputs: (\S+) ", out, re.MULTILINE)[1])
    assert directory.parent == tmp_path / "tmp" / f"pytest-nosync-{getpass.getuser()}" / "profiles"
    assert [p.name for p in directory.iterdir()] == ["tiny-eager.json"]
    assert f"trace: {directory / 'tiny-eager.json'} (open it in Perfetto)" in out
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700 and stat.S_IMODE(directory.parent.stat().st_mode) == 0o700
    assert not list((tmp_path / "cwd").iterdir())


def test_out_names_a_file_or_a_directory(tmp_path: Path, capsys: Any) -> None:
    assert _main("profile", "--target", "tiny", "--warmup", "0", "--out", f"{tmp_path}/new/") == 0
    assert (tmp_path / "new" / "tiny-eager.json").is_file()
    compiled = ("--mode", "compile", "--backend", "eager", "--device", "cpu")
    assert _main("profile", "--target", "tiny", "--warmup", "0", *compiled, "--out", str(tmp_path)) == 0
    assert (tmp_path / "tiny-compile.json").is_file()
    assert "outputs:" not in capsys.readouterr().out


def test_the_temporary_directories_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    made = []
    for i in range(4):
        made.append(fresh_private_dir("profiles", prefix="tiny-eager-", keep=3))
        os.utime(made[-1], (i, i))  # oldest first
    (made[0].parent / "notes.txt").write_text("not a directory of outputs: kept")
    made.append(fresh_private_dir("profiles", prefix="tiny-eager-", keep=3))
    assert sorted(made[0].parent.iterdir()) == sorted([*made[-3:], made[0].parent / "notes.txt"])


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a directory away needs root")
def test_a_private_directory_someone_else_made_is_refused(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its name is guessable: another user could make it first, to read or replace what is written there."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    planted = tmp_path / f"pytest-nosync-{getpass.getuser()}"
    planted.mkdir(mode=0o777)
    os.chown(planted, 12345, 12345)
    with pytest.raises(SystemExit) as exit_info:
        _main("profile", "--target", "tiny")
    assert exit_info.value.code == 4
    assert f"no private temporary directory: {planted} belongs to another user" in capsys.readouterr().err
    assert not list(planted.iterdir())


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("profile", "--target", "flux"), "unknown target 'flux'; known: tiny"),
        (("profile", "--target", "tiny", "--budget", "nope=1"), "unknown budget 'nope'"),
        (("profile", "--target", "tiny", "--schedule", "1"), "expected WAIT,WARMUP,ACTIVE"),
        (("profile", "--target", "tiny", "--nsys", "--device", "emu"), "--nsys marks CUDA work for nsys (NVTX ranges"),
    ],
)
def test_usage_errors(argv: tuple[str, ...], message: str, capsys: Any) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _main(*argv)
    assert exit_info.value.code == 4
    assert message in capsys.readouterr().err


def test_diagnose_a_trace_file_with_python_dash_m(tmp_path: Path) -> None:
    root = Path(__file__).parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    argv = [sys.executable, "-m", "pytest_nosync", "diagnose", str(DATA / "gpu_eager.json")]
    done = subprocess.run([*argv, "--json", str(tmp_path / "d.json")], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "trace diagnosis: 3 step(s), GPU activity recorded" in done.stdout and "dtoh_sync" in done.stdout
    assert json.loads((tmp_path / "d.json").read_text())["syncs"][0]["where"] == "pipe.py:60"


def test_real_targets_when_the_registry_is_there(tmp_path: Path, capsys: Any) -> None:
    registry = pytest.importorskip(
        "pytest_nosync.suite.targets.registry", reason="the target registry is not merged yet"
    )
    if "wan" not in registry.TARGETS or registry.missing_classes(registry.TARGETS["wan"]):
        pytest.skip("no wan target in this diffusers")
    out = tmp_path / "wan.json"
    assert (
        main(["profile", "--target", "wan", "--steps", "2", "--warmup", "0", "--device", "cpu", "--out", str(out)]) == 0
    )
    regions = {r.name for r in Trace.load(str(out)).region_ranges()}
    assert {"nosync::region::transformer_forward", "nosync::region::scheduler_step"} <= regions
    assert "trace diagnosis: 2 step(s)" in capsys.readouterr().out


def test_a_bad_device_leaves_no_directory_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(SystemExit) as exit_info:
        _main("profile", "--target", "tiny", "--device", "nope")
    assert exit_info.value.code == 4 and "--device nope" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # the outputs' directory was made after the device was known


def test_without_a_gpu_the_default_device_is_the_emulation_as_in_pytest(tmp_path: Path, capsys: Any) -> None:
    assert _main("profile", "--target", "tiny", "--out", str(tmp_path / "t.json")) == 0
    assert BUILT[-1].device.startswith("emu"), BUILT[-1].device  # not the plain CPU, where no sync can be seen
    assert "syncs: not checked on the plain CPU" not in capsys.readouterr().out


def _build_failing(target: Target, device: torch.device, dtype: torch.dtype, checkpoint: str | None = None) -> Any:
    pipe = _build(target, device, dtype, checkpoint)
    pipe.scheduler.fail_at = 0  # every call raises in its first scheduler step
    return pipe


@pytest.mark.parametrize("warmup", ["1", "0"])
def test_a_pipeline_raising_in_a_warm_up_call_or_the_profiled_one_is_its_error_finding(
    warmup: str, tmp_path: Path, capsys: Any
) -> None:
    """The bug twin of test_profile_eager_writes_the_trace_and_prints_the_diagnosis: a warm-up call's raise is the
    report's `error` finding, at the line that raised, as the profiled call's is (not a traceback out of the
    command); exit status 1."""
    argv = ["profile", "--target", "tiny", "--warmup", warmup, "--device", "emu", "--out", str(tmp_path / "t.json")]
    assert main(argv, targets={"tiny": TINY}, build=_build_failing) == 1
    err = capsys.readouterr().err
    assert re.search(r"^ +error +tests/profiling/tiny_pipeline\.py:\d+ ", err, re.MULTILINE), err
    assert "ValueError: scheduler failed" in err
    assert (tmp_path / "t.json").exists() is (warmup == "0")  # a warm-up's raise leaves no profiled call to trace
