"""What the benchmarks share: timing calls, and printing/saving their results."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import torch


def timed(fn: Callable[[], Any], calls: int) -> list[float]:
    """Milliseconds of each of `calls` calls of fn."""
    out = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1e3)
    return out


def emit(results: dict[str, Any], device: torch.device, json_path: str | None) -> None:
    """Add the device and torch version, print the results, and save them when asked."""
    results["device"] = torch.cuda.get_device_name() if device.type == "cuda" else str(device)
    results["torch"] = torch.__version__
    print(json.dumps(results, indent=1))
    if json_path:
        with open(json_path, "w") as fh:
            json.dump(results, fh, indent=1)
