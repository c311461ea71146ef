"""host_overhead judges steady steps: a module-tree walk in one is found at its line; a block whose steps are all
warm-up cannot be judged and says so instead of passing."""

from __future__ import annotations

import torch

from pytest_nosync import nosync_guard

TREE = torch.nn.Sequential(*[torch.nn.Linear(2, 2) for _ in range(80)])  # more modules than a walk may visit


def walks(g, steps: int) -> None:
    for _ in range(steps):
        with g.step():
            sum(1 for _ in TREE.named_modules())  # twin: walk


def test_a_walk_in_a_steady_step_is_found(backend: str) -> None:
    with nosync_guard(checks=("host_overhead",), backend=backend) as g:
        walks(g, steps=2)
    assert g.report.passed is False
    assert {f.step for f in g.report.failures} == {1}  # step 0 is warm-up: lazy initialisation walks once


def test_a_block_of_warm_up_steps_only_is_not_checked(backend: str) -> None:
    with nosync_guard(checks=("host_overhead",), backend=backend) as g:
        walks(g, steps=1)
    assert g.report.passed is False and [f.kind for f in g.report.failures] == ["not_checked"]  # no walk judged
    assert any("the block ran 1 step(s): run at least 2" in reason for reason in g.report.not_checked)
