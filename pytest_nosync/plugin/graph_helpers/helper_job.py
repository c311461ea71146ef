"""One graph job in a helper process (plugin.graph_helpers.helper): its target's pipeline prepared once per process,
its graph check run through the suite's one path to a pipeline (suite.pipelines), plain.

It imports torch, diffusers and the suite at its top: the helper imports it only once its stdout is kept for the
answers, so that an import that prints cannot corrupt them."""

from __future__ import annotations

import time

import torch

from ...suite.pipelines import Prepared, check, prepare
from ...suite.targets.base import CallContext
from ...suite.targets.registry import TARGETS, TargetUnavailable, build_pipeline
from .pool import GraphJob, Outcome


def one_thread_on_cpu(job: GraphJob) -> None:
    """A job on the CPU takes one thread: the process that runs the other checks keeps the other cores."""
    if torch.device(job.device).type == "cpu":
        torch.set_num_threads(1)


def run(job: GraphJob, pipelines: dict[tuple[str, str, str], Prepared]) -> Outcome:
    """The job's check, as the suite's test runs it in its own process (plugin.suite_run.SuiteRun.check)."""
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
                   steps=job.steps, test_id=job.test_id, target=job.target,
                   steps_are_calls=target.steps_are_calls)  # fmt: skip
    report.metrics["helper_s"] = round(time.perf_counter() - start, 3)  # its build (first job) and trace, in the helper
    return Outcome(report=report)
