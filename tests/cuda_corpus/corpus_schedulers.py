"""Scheduler loops written for a GPU, each step guarded: real diffusers schedulers, real syncs (or none).

`# expect: <kind> in <file>` names a finding inside diffusers: the verdict and the place must agree between the GPU
and the emulation.
"""

import pytest
import torch
from diffusers import FlowMatchEulerDiscreteScheduler, UniPCMultistepScheduler

DEVICE = torch.device("cuda")
pytestmark = pytest.mark.gpu


def _loop(nosync, scheduler, steps=4):
    sample = torch.randn(1, 4, 8, 8, generator=torch.Generator(DEVICE).manual_seed(0), device=DEVICE)
    timesteps = list(scheduler.timesteps.unbind(0))
    with nosync.guard() as g:
        for t in timesteps[:steps]:
            with g.step():
                sample = scheduler.step(sample * 0.1, t, sample, return_dict=False)[0]


@pytest.mark.nosync
def test_flow_match_without_set_begin_index(nosync):
    # expect: dtoh_sync in diffusers/schedulers/scheduling_flow_match_euler_discrete.py
    scheduler = FlowMatchEulerDiscreteScheduler()
    scheduler.set_timesteps(4, device=DEVICE)
    _loop(nosync, scheduler)


@pytest.mark.nosync
def test_clean_flow_match_with_set_begin_index(nosync):
    scheduler = FlowMatchEulerDiscreteScheduler()
    scheduler.set_timesteps(4, device=DEVICE)
    scheduler.set_begin_index(0)
    _loop(nosync, scheduler)


@pytest.mark.nosync
def test_unipc_flow_copies_host_sigmas_every_step(nosync):
    # expect: htod_sync in diffusers/schedulers/scheduling_unipc_multistep.py
    # expect: dtoh_sync in diffusers/schedulers/scheduling_unipc_multistep.py (torch.linalg.solve's error check)
    scheduler = UniPCMultistepScheduler(prediction_type="flow_prediction", use_flow_sigmas=True, flow_shift=3.0)
    scheduler.set_timesteps(4, device=DEVICE)
    scheduler.set_begin_index(0)
    _loop(nosync, scheduler)
