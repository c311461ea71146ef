"""Bug twins for the suite's four checks: a real pipeline whose denoiser does one offending thing.

Each `install_*` wraps the denoiser's forward (an instance attribute, removed by `uninstall`) so that it
runs the real forward plus one offending line, marked `# twin:`. The checks must name that line.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch


def line_of(marker: str) -> str:
    path = inspect.getsourcefile(line_of)
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if f"# twin: {marker}" in line:
                return f"{path}:{number}"
    raise AssertionError(marker)


def _wrap(module: torch.nn.Module, after: Callable[[Any], Any]) -> None:
    original = module.forward

    def forward(*args: Any, **kwargs: Any) -> Any:
        return after(original(*args, **kwargs))

    module.forward = forward


def uninstall(module: torch.nn.Module) -> None:
    module.__dict__.pop("forward", None)


def install_sync(module: torch.nn.Module) -> None:
    def after(out: Any) -> Any:
        out[0].float().abs().mean().item()  # twin: syncs
        return out

    _wrap(module, after)


def install_sync_once(module: torch.nn.Module) -> None:
    """A sync in the first measured call only: a finding its re-run does not show (a flaky one). With two steps of
    one denoiser call each, calls 1-2 are the warm-up call, 3-4 the measured call, 5-6 a re-run."""
    calls = {"n": 0}

    def after(out: Any) -> Any:
        calls["n"] += 1
        if calls["n"] in (3, 4):
            out[0].float().abs().mean().item()  # twin: sync once
        return out

    _wrap(module, after)


def install_graph_break(module: torch.nn.Module) -> None:
    def after(out: Any) -> Any:
        if out[0].float().mean() > -1e30:  # twin: graph_breaks
            return out
        return out

    _wrap(module, after)


def install_recompile(module: torch.nn.Module) -> None:
    state = {"calls": 0}

    def after(out: Any) -> Any:
        state["calls"] += 1  # twin: recompiles (a Python value that changes every call, read into the graph)
        scaled = out[0] * (1.0 + state["calls"] * 1e-12)
        return (scaled, *tuple(out)[1:])

    _wrap(module, after)


def install_leak(module: torch.nn.Module) -> list[torch.Tensor]:
    kept: list[torch.Tensor] = []

    def after(out: Any) -> Any:
        kept.append(out[0].detach() * 1)  # twin: alloc_growth
        return out

    _wrap(module, after)
    return kept


def install_leak_refusing_dispatch_modes(module: torch.nn.Module) -> list[torch.Tensor]:
    """The leak, in a denoiser that raises under any dispatch mode, as FlexAttention compiling itself does on torch
    2.13 (on the H200's torch 2.11 it ran under the site tracker): what the re-run noting allocation sites meets."""
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    kept: list[torch.Tensor] = []

    def after(out: Any) -> Any:
        kept.append(out[0].detach() * 1)
        if _get_current_dispatch_mode() is not None:
            raise RuntimeError("no dispatch mode may watch this call")
        return out

    _wrap(module, after)
    return kept


def install_walk(module: torch.nn.Module) -> None:
    def after(out: Any) -> Any:
        sum(1 for _ in module.named_modules())  # twin: host_overhead
        return out

    _wrap(module, after)


TWINS: dict[str, Callable[[torch.nn.Module], Any]] = {
    "syncs": install_sync,
    "graph_breaks": install_graph_break,
    "recompiles": install_recompile,
    "alloc_growth": install_leak,
    "host_overhead": install_walk,
}
