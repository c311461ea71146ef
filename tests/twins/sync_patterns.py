"""Bug twins and clean twins for the sync detectors: each a real offending (or innocent) pattern.

Every bug twin has exactly one line marked `# expect: <kind>`; the detector must report that kind at
that file:line and nothing else. Clean twins must produce no finding at all. Each twin takes a float
tensor `x` (8 values, already on the device) and the device.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class Twin:
    name: str
    fn: Callable[[torch.Tensor, torch.device], object]
    kind: str | None  # None: a clean twin
    needs_cuda: bool = False  # uses something only a real CUDA device has (pinned memory)

    @property
    def expected_where(self) -> str:
        lines, start = inspect.getsourcelines(self.fn)
        for offset, line in enumerate(lines):
            if "# expect:" in line:
                return f"{inspect.getsourcefile(self.fn)}:{start + offset}"
        raise AssertionError(f"twin {self.name} has no '# expect:' line")


BUG_TWINS: list[Twin] = []
CLEAN_TWINS: list[Twin] = []


def bug(kind: str, needs_cuda: bool = False):
    def register(fn):
        BUG_TWINS.append(Twin(fn.__name__, fn, kind, needs_cuda))
        return fn

    return register


def clean(needs_cuda: bool = False):
    def register(fn):
        CLEAN_TWINS.append(Twin(fn.__name__, fn, None, needs_cuda))
        return fn

    return register


# ---- device -> host reads ----------------------------------------------------------------------
@bug("dtoh_sync")
def item(x, dev):
    return x.sum().item()  # expect: dtoh_sync


class _ItemOfSum(torch.nn.Module):
    def forward(self, x):
        return x.sum().item()


_ITEM_GRAPH = torch.fx.symbolic_trace(_ItemOfSum())  # its forward is code fx generated: `<eval_with_key>.N`


@bug("dtoh_sync")
def item_in_an_fx_graph(x, dev):
    return _ITEM_GRAPH(x)  # expect: dtoh_sync (the graph's generated code is torch's, its name changes per run)


@bug("dtoh_sync")
def float_of_tensor(x, dev):
    return float(x[0])  # expect: dtoh_sync


@bug("dtoh_sync")
def int_of_tensor(x, dev):
    return int(x.argmax())  # expect: dtoh_sync


@bug("dtoh_sync")
def if_condition(x, dev):
    if (x > 10).any():  # expect: dtoh_sync
        return x * 2
    return x


@bug("dtoh_sync")
def tolist(x, dev):
    return x.tolist()  # expect: dtoh_sync


@bug("dtoh_sync")
def cpu_copy(x, dev):
    return x.cpu()  # expect: dtoh_sync


@bug("dtoh_sync")
def to_cpu(x, dev):
    return x.to("cpu")  # expect: dtoh_sync


@bug("dtoh_sync")
def print_of_tensor(x, dev):
    print(x)  # expect: dtoh_sync (a debug print in a loop: formatting copies to the host)


@bug("dtoh_sync")
def fstring_of_tensor(x, dev):
    return f"latents: {x}"  # expect: dtoh_sync


@bug("dtoh_sync")
def str_of_tensor(x, dev):
    return str(x * 2)  # expect: dtoh_sync


@bug("dtoh_sync")
def nonzero(x, dev):
    return torch.nonzero(x > 0)  # expect: dtoh_sync


@bug("dtoh_sync")
def mask_index(x, dev):
    mask = x > 0
    return x[mask]  # expect: dtoh_sync


_TABLE = torch.linspace(1.0, 0.0, 10)  # a scheduler's table kept on the host, as DDIM's alphas_cumprod


@bug("dtoh_sync")
def host_table_device_index(x, dev):
    timestep = (x[0] * 0).long()  # a timestep on the device (one value: CUDA refuses more to index a host tensor)
    return _TABLE[timestep]  # expect: dtoh_sync


@bug("dtoh_sync")
def masked_select(x, dev):
    return torch.masked_select(x, x > 0)  # expect: dtoh_sync


@bug("dtoh_sync")
def unique(x, dev):
    return torch.unique(x.round())  # expect: dtoh_sync


@bug("dtoh_sync")
def repeat_interleave_tensor_repeats(x, dev):
    repeats = torch.ones(8, dtype=torch.long, device=dev)
    return x.repeat_interleave(repeats)  # expect: dtoh_sync


@bug("dtoh_sync")
def shape_from_device_value(x, dev):
    n = (x.abs() > -1).sum()
    return torch.zeros(n, device=dev)  # expect: dtoh_sync


@bug("dtoh_sync")
def where_single_argument(x, dev):
    return torch.where(x > 0)  # expect: dtoh_sync


@bug("dtoh_sync")
def tensor_equal(x, dev):
    return torch.equal(x, x * 1)  # expect: dtoh_sync


@bug("dtoh_sync")
def step_index_lookup(x, dev):
    # The scheduler pattern that set_begin_index avoids: find a timestep's index on the device.
    timesteps = x.sort().values
    return (timesteps == timesteps[3]).nonzero()[0].item()  # expect: dtoh_sync


# ---- host -> device blocking copies ------------------------------------------------------------
@bug("htod_sync")
def tensor_from_python_list(x, dev):
    return torch.tensor([0.5, 0.25], device=dev)  # expect: htod_sync


@bug("htod_sync")
def to_device_of_pageable(x, dev):
    host = torch.arange(8, dtype=x.dtype)
    return host.to(dev)  # expect: htod_sync


@bug("htod_sync")
def host_sigma_per_step(x, dev):
    # The scheduler pattern: sigmas kept on the host, one copied to the device per step.
    sigmas = torch.linspace(1.0, 0.0, 9)
    return x * sigmas[2].to(dev)  # expect: htod_sync


@bug("htod_sync")
def as_tensor_of_numpy(x, dev):
    return torch.as_tensor(np.ones(4, dtype=np.float32), device=dev)  # expect: htod_sync


# ---- explicit synchronize ----------------------------------------------------------------------
@bug("device_sync", needs_cuda=True)
def explicit_synchronize(x, dev):
    y = x * 2
    torch.cuda.synchronize()  # expect: device_sync
    return y


# ---- clean twins: must produce no finding ------------------------------------------------------
@clean()
def stack_of_device_scalars(x, dev):
    return torch.stack([x[0], x[1], x.sum()])


@clean()
def ones_times_half(x, dev):
    return torch.ones(1, dtype=x.dtype, device=dev) * 0.5


@clean()
def python_int_indexing(x, dev):
    return x[3] + x[-1]


@clean()
def device_only_math(x, dev):
    y = torch.where(x > 0, x, torch.zeros_like(x))
    z = y.masked_fill(y > 1, 1.0).repeat_interleave(2)
    return torch.cat([z, x.sort().values]).mean()


@clean()
def repeat_interleave_with_output_size(x, dev):
    repeats = torch.full((8,), 2, dtype=torch.long, device=dev)
    return x.repeat_interleave(repeats, output_size=16)


@clean(needs_cuda=True)
def non_blocking_from_pinned(x, dev):
    host = torch.arange(8, dtype=x.dtype).pin_memory()
    return host.to(dev, non_blocking=True)
