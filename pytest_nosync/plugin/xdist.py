"""Many GPUs through pytest-xdist: one worker per GPU, pinned before CUDA is initialised.

`pytest -m gpu --nosync -n auto` starts one worker per visible GPU (none with one GPU); worker k sees only GPU k
(CUDA_VISIBLE_DEVICES is in the worker's environment from its start, before any conftest can touch CUDA). More
workers than GPUs is a usage error unless `--nosync-share-gpus` says sharing is wanted (then workers take GPUs
round-robin). Results travel back as report properties, so the controller writes one merged report.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from enum import Enum
from typing import Any

import pytest

from .. import ids
from .options import checking


class Role(Enum):
    """What this process is to pytest-xdist."""

    ALONE = "alone"  # no xdist: the run is this process
    CONTROLLER = "controller"  # schedules the tests, merges what workers report
    WORKER = "worker"  # runs tests for a controller


def role(config: pytest.Config) -> Role:
    if hasattr(config, "workerinput"):
        return Role.WORKER
    return Role.CONTROLLER if config.getoption("numprocesses", default=None) else Role.ALONE


GPU_VARIABLE = "CUDA_VISIBLE_DEVICES"
BASELINE_KEY = "nosync_baseline"  # the controller's resolved baseline path, handed to every worker
BACKEND_KEY = "nosync_backend"  # the controller's resolved backend, which every worker must run


def controllers_backend(config: pytest.Config) -> str | None:
    """In an xdist worker: the backend the controller resolved for the run (None elsewhere)."""
    workerinput = getattr(config, "workerinput", None)
    return workerinput.get(BACKEND_KEY) if workerinput is not None else None


def visible_gpus() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES entries (the controller's view)."""
    listed = os.environ.get(GPU_VARIABLE)
    if listed is not None:
        return [g.strip() for g in listed.split(",") if g.strip() and g.strip() != "-1"]
    from ..detection import devices  # plugin cheap when off: torch only where GPUs are counted

    return [str(i) for i in range(devices.cuda_device_count())] if devices.cuda_available() else []


def gpu_for_worker(worker_index: int, gpus: list[str], share: bool) -> str:
    if worker_index < len(gpus):
        return gpus[worker_index]
    if share and gpus:
        return gpus[worker_index % len(gpus)]
    raise pytest.UsageError(
        f"worker gw{worker_index} has no GPU of its own ({len(gpus)} visible): use -n {len(gpus) or 1} "
        "or -n auto, or --nosync-share-gpus to let workers share GPUs"
    )


def pin_specs(specs: list[Any], share: bool, renumbered: bool = False) -> None:
    """On the controller, before xdist starts its workers: worker k's GPU goes into its process's environment
    (execnet's `env:` spec, applied before pytest starts there). A worker's own configure hook is too late: conftests
    load before it, and diffusers' tests/conftest.py asks torch.cuda.is_available() on import, which initialises CUDA
    with every GPU visible, so that every worker ran on the first GPU. A spec that names the variable is the user's."""
    import execnet  # an optional dependency: pytest-xdist's, only where xdist starts workers

    gpus = visible_gpus()
    if renumbered:  # an MPS daemon started under CUDA_VISIBLE_DEVICES shows its clients those GPUs as 0, 1, ...
        gpus = [str(position) for position in range(len(gpus))]
    for index, spec in enumerate(specs):
        if gpus and GPU_VARIABLE not in spec.env:
            pinned = execnet.XSpec(f"{spec}//env:{GPU_VARIABLE}={gpu_for_worker(index, gpus, share)}")
            pinned.id = spec.id  # xdist numbered the workers (gw0, gw1, ...) on the specs it made
            specs[index] = pinned


def share_cores(config: pytest.Config) -> int | None:
    """In an xdist worker: its share of the machine's cores for torch's CPU threads. Each process would otherwise
    start one thread per core, and N workers' threads spinning on the same cores slow every CPU op by far more than
    N (a tiny pipeline's step took seconds with 14 workers on 16 cores). The processes its tests start (a pipeline run
    in a subprocess, a pytest session of their own) keep to the same share, through OMP_NUM_THREADS. That variable, when
    set already, is the user's."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None or os.environ.get("OMP_NUM_THREADS"):
        return None
    import torch  # plugin cheap when off: only an xdist worker of a checking run sets its threads

    threads = max(1, (os.cpu_count() or 1) // max(1, int(workerinput.get("workercount", 1))))
    torch.set_num_threads(threads)
    os.environ["OMP_NUM_THREADS"] = str(threads)  # read by torch in each process this worker's tests start
    return threads


def auto_workers(config: pytest.Config) -> int | None:
    """`-n auto` with --nosync on a GPU machine: one worker per visible GPU, and none (the run stays in this process)
    with a single GPU: one worker would add its start-up and lose the graph helpers, which xdist runs do not use.
    (Asked before the plugins' configure, so before there is a session.)"""
    if not checking(config):
        return None
    gpus = len(visible_gpus())
    if not gpus:
        return None  # no GPU: xdist's own default (CPU count) applies
    return gpus if gpus > 1 else 0


COSTS_KEY = "nosync/seconds_per_target"  # in pytest's cache: what each target group took in the last run


def longest_first(items: list[pytest.Item], costs: dict[str, float]) -> list[pytest.Item]:
    """The items with the costliest target groups first (known costs from the last run; unknown ones after the known,
    in collection order): xdist's loadgroup scheduler hands out groups in this order, so the long groups start at
    once and the short ones fill the gaps (longest processing time first)."""

    def group(item: pytest.Item) -> str | None:
        marker = item.get_closest_marker("xdist_group")
        return str(marker.args[0]) if marker and marker.args else None

    return sorted(items, key=lambda item: -costs.get(group(item) or "", -1.0))


def distributing(config: pytest.Config) -> bool:
    """Whether this process schedules or runs tests for xdist workers."""
    return role(config) is not Role.ALONE


def check_worker_count(config: pytest.Config, share: bool) -> None:
    """Fail early, with a sentence, when an explicit -n exceeds the GPUs."""
    wanted = config.getoption("numprocesses", default=None)
    if not isinstance(wanted, int) or wanted <= 1 or share:
        return
    gpus = visible_gpus()
    if gpus and wanted > len(gpus):
        raise pytest.UsageError(
            f"-n {wanted} asks for more workers than the {len(gpus)} visible GPU(s): "
            "use -n auto (one worker per GPU), or --nosync-share-gpus to share GPUs on purpose"
        )


def group_of(nodeid: str, targets: Collection[str]) -> str:
    """The work unit `--dist loadgroup` should make of a test: its `@<group>` where xdist could add one; else, for the
    tests this plugin groups, the group read from the id itself (a tester class's checks share their class, a built-in
    target's tests their target, a part of the parameter id); any other test is a unit of its own.

    Why not xdist's suffix alone: xdist passes the group to its scheduler by rewriting the worker's node ids, which
    pytest 9.2's structured ids ignore; every test then became its own unit, and a tester's four checks built and
    calibrated its pipeline on up to four workers (pytest-dev/pytest-xdist#1386)."""
    plain, group = ids.split_group(nodeid)
    if plain != nodeid:
        return group
    census = ids.parse(nodeid)
    if census is not None:
        return census.tester
    test = ids.target_test(nodeid, targets)
    return test.param if test is not None else nodeid


def make_scheduler(config: pytest.Config, log: Any, targets: Collection[str]) -> Any:
    """xdist's loadgroup scheduler, its units given by `group_of`."""
    from xdist.scheduler import LoadGroupScheduling  # an optional dependency: pytest-xdist

    class Groups(LoadGroupScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid, targets)

        def remove_node(self, node: Any) -> str | None:
            """A crashed worker's units go back to the queue without the test it crashed on (xdist reports that one as
            failed; run again it crashed the replacement too, pytest-dev/pytest-xdist#1371) and without the units it
            had finished (each went back as an empty unit that no worker completes, and the run waited at its end
            with every worker idle, pytest-dev/pytest-xdist#1378). Seen in a census whose worker the OOM killer took."""
            workload = self.assigned_work.get(node, {})
            crashed = next((nodeid for unit in workload.values() for nodeid, done in unit.items() if not done), None)
            if crashed is None:
                return super().remove_node(node)
            for unit in workload.values():
                if crashed in unit:
                    unit[crashed] = True
            for scope in [scope for scope, unit in workload.items() if all(unit.values())]:
                del workload[scope]
            super().remove_node(node)  # what is left goes back to the queue, and the other workers are rescheduled
            return crashed

    return Groups(config, log)
