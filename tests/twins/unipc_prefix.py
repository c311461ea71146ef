"""Bug twins of the UniPC fix: the scheduler with its predictor/corrector doing what they did before.

Before the fix, UniPC's multistep predictor and corrector gathered the ratios `rks` (device scalars) into
a Python list and rebuilt a tensor from it, and created the constant 0.5 from host data on every step.
These subclasses run those same tensor operations at the same point of each update, then the real update.
"""

from __future__ import annotations

import inspect

import torch
from diffusers import UniPCMultistepScheduler


def line_of(marker: str) -> str:
    """file:line of the twin line carrying `marker`."""
    path = inspect.getsourcefile(line_of)
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if marker in line and "line_of" not in line and '"' not in line.split("#")[0][-3:]:
                return f"{path}:{number}"
    raise AssertionError(marker)


def _ratios(scheduler: UniPCMultistepScheduler, order: int, device: torch.device) -> list[torch.Tensor]:
    """The device scalars the pre-fix predictor put into a list: (lambda_si - lambda_s0) / h."""

    def lam(index: int) -> torch.Tensor:
        alpha, sigma = scheduler._sigma_to_alpha_sigma_t(scheduler.sigmas[index].to(device))
        return torch.log(alpha) - torch.log(sigma)

    i = scheduler.step_index
    lambda_s0, lambda_t = lam(i), lam(i + 1)
    h = lambda_t - lambda_s0
    return [(lam(i - k) - lambda_s0) / h for k in range(1, order)]


class PreFixRksScheduler(UniPCMultistepScheduler):
    def multistep_uni_p_bh_update(self, model_output, *args, sample=None, order=None, **kwargs):
        rks = _ratios(self, order, sample.device)
        rks.append(1.0)
        rks = torch.tensor(rks, device=sample.device)  # twin: torch.tensor(rks)
        return super().multistep_uni_p_bh_update(model_output, *args, sample=sample, order=order, **kwargs)


class PreFixHalfScheduler(UniPCMultistepScheduler):
    def multistep_uni_p_bh_update(self, model_output, *args, sample=None, order=None, **kwargs):
        if order == 2:
            rhos_p = torch.tensor([0.5], dtype=sample.dtype, device=sample.device)  # twin: torch.tensor([0.5])
            del rhos_p
        return super().multistep_uni_p_bh_update(model_output, *args, sample=sample, order=order, **kwargs)
