"""Clean twin of the modulate_index case: the same transformer with the index built once and reused.

The fix caches the `modulate_index` tensor, which only depends on the image shapes. This mode does the
same from outside: the first `torch.tensor(<int list>, device=..., dtype=torch.int)` of a given content
is built, later identical ones reuse it, so steps 2..N copy nothing from the host.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode


class ReuseIntIndexTensors(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.cache: dict[tuple, torch.Tensor] = {}
        self.hits = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        # By name: the emulated device wraps torch.tensor, modes see the builtin underneath.
        is_tensor = getattr(func, "__name__", "") == "tensor" and func is not torch.Tensor
        if is_tensor and kwargs.get("dtype") is torch.int and isinstance(args[0], list):
            key = (repr(args[0]), str(kwargs.get("device")))
            if key in self.cache:
                self.hits += 1
                return self.cache[key]
            self.cache[key] = func(*args, **kwargs)
            return self.cache[key]
        return func(*args, **kwargs)
