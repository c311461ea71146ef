"""A graph helper process (see plugin.graph_helpers): `python -m pytest_nosync.plugin.graph_helpers.helper`.

It answers on its stdout, which it keeps for the messages alone (stray prints go to its stderr): first the file of
the diffusers it imported, then one Outcome per GraphJob read from stdin, until a None.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from typing import TYPE_CHECKING

from .pool import GraphJob, Outcome, diffusers_file, receive, send

if TYPE_CHECKING:
    from ...suite.pipelines import Prepared


def run(job: GraphJob, pipelines: dict[tuple[str, str, str], Prepared]) -> Outcome:
    """The job's check, as the suite's test runs it in its own process (plugin.suite_run.SuiteRun.check): through the
    suite's one path to a pipeline (suite.pipelines), plain."""
    # the helper's interpreter imports torch, diffusers and the suite once it has its stdout to itself (main)
    import torch

    from ...suite.pipelines import check, prepare
    from ...suite.targets.base import CallContext
    from ...suite.targets.registry import TARGETS, TargetUnavailable, build_pipeline

    start = time.perf_counter()
    target = TARGETS[job.target]
    device, dtype = torch.device(job.device), getattr(torch, job.dtype)
    key = (job.target, job.device, job.dtype)
    try:
        if key not in pipelines:
            pipelines[key] = prepare(lambda: build_pipeline(target, device, dtype), None, target.denoiser, device)
    except TargetUnavailable as exc:
        return Outcome(skipped=str(exc))
    ctx = CallContext(device, dtype, job.steps, job.seed)
    report = check(pipelines[key], "graph_breaks", lambda pipe: target.kwargs_by_steps(pipe, ctx), job.options,
                   steps=job.steps, test_id=job.test_id, target=job.target)  # fmt: skip
    report.metrics["helper_s"] = round(time.perf_counter() - start, 3)  # its build (first job) and trace, in the helper
    return Outcome(report=report)


def main() -> None:
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a print in a model's code must not corrupt the answers
    jobs = sys.stdin.buffer
    import torch  # after stdout is kept for the answers: an import that prints cannot corrupt them

    send(answers, diffusers_file())
    pipelines: dict[tuple[str, str, str], Prepared] = {}
    while (job := receive(jobs)) is not None:
        if torch.device(job.device).type == "cpu":
            torch.set_num_threads(1)  # the process that runs the other checks keeps the other cores
        try:
            outcome = run(job, pipelines)
        except Exception:
            outcome = Outcome(failed=traceback.format_exc(limit=-3).strip().splitlines()[-1][:300])
        send(answers, outcome)


if __name__ == "__main__":
    main()
