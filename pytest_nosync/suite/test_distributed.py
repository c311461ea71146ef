"""Context parallelism over 2 GPUs: the collectives of a sharded denoiser add no host sync inside a step.

Needs 2 GPUs visible to this process: run it without -n (an xdist worker sees one GPU) on a 2+ GPU runner.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

import pytest
import torch

from pytest_nosync.detection import devices
from pytest_nosync.policy import rejudge
from pytest_nosync.suite import distributed

pytestmark = pytest.mark.gpu
WORLD = 2


@pytest.mark.parametrize("mode", ["ulysses", "ring"])
@pytest.mark.parametrize("nosync_target", ["flux", "wan"], indirect=True)
def test_context_parallel_adds_no_sync_in_a_step(
    mode, nosync_target, nosync_call_context, nosync_guard_kwargs, nosync, tmp_path, request
) -> None:
    if not devices.cuda_available():
        pytest.skip(devices.CUDA_ONLY)
    if torch.cuda.device_count() < WORLD:
        pytest.skip(f"needs {WORLD} GPUs visible to this process (run it without -n, on a runner with {WORLD}+)")
    reason = distributed.context_parallel_unavailable()
    if reason:
        pytest.skip(reason)
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(WORLD),
        "-m", "pytest_nosync.suite.distributed", "--target", nosync_target.name, "--mode", mode, "--out", str(tmp_path),
        "--steps", str(nosync_call_context.steps),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=dict(os.environ))
    missing = [r for r in range(WORLD) if not (tmp_path / distributed.RANK_REPORT.format(rank=r)).exists()]
    if missing:
        # torchrun prefixes each rank's own output with [rankN]: keep those, they hold the real error.
        rank_lines = [line for line in done.stderr.splitlines() if line.startswith("[rank")]
        detail = "\n".join(rank_lines[-40:]) or done.stderr[-3000:]
        pytest.fail(f"ranks {missing} wrote no report (exit {done.returncode}):\n{detail}", pytrace=False)
    check = f"context_parallel:{mode}{WORLD}"
    options = nosync_guard_kwargs(check, nosync_target.name)["options"]
    for report in distributed.read_reports(tmp_path, WORLD):
        judged = rejudge(report, options.policy, options.known)
        nosync.add_report(replace(judged, test_id=f"{request.node.nodeid}[{report.test_id}]"))
