"""Graph breaks and recompiles from one dynamo pass: the same break reasons and places `torch._dynamo.explain`
reports, a recompile caught at the line that caused it, and no check pretended where dynamo cannot trace."""

from __future__ import annotations

import inspect
import os
from types import SimpleNamespace

import pytest
import torch

from pytest_nosync import nosync_guard
from pytest_nosync.detection.devices import for_checks


def _place(frame) -> str:
    return f"{os.path.realpath(frame.filename)}:{frame.lineno}"


def _line(fn, marker: str) -> str:
    lines, start = inspect.getsourcelines(fn)
    offset = next(i for i, text in enumerate(lines) if f"# {marker}" in text)
    return f"{os.path.realpath(inspect.getsourcefile(fn))}:{start + offset}"


class Branchy(torch.nn.Module):
    """A data-dependent branch: dynamo cannot trace through `if tensor:`."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        if y.sum() > 0:  # break: branch
            return y * 2
        return y


class Printing(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        print("shape", tuple(y.shape))  # break: print
        return y.relu()


class Listing(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        scale = y.abs().max().tolist()  # break: tolist
        return y / (1.0 + scale)


class Counting(torch.nn.Module):
    """A Python value that changes every call, read into the graph: a recompile per call."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1  # recompile: the guard `self.calls == N` fails on this read in every later call
        return self.linear(x) * (1.0 + self.calls * 1e-6)


class Clean(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.where(self.linear(x) > 0, x, -x)


class Widening(torch.nn.Module):
    """A break in every block of a stack whose widths differ, as a casting hook breaks in every layer: the frame that
    resumes after it recompiles once per width (parameter shapes are static) until dynamo's recompile limit."""

    def __init__(self, widths: list[int]) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(_Block(width) for width in widths)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


class _Block(torch.nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.up, self.down = torch.nn.Linear(8, width), torch.nn.Linear(width, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        print(end="")  # limit: the frame resuming after this break recompiles per width
        return self.down(self.up(x))


class _Recast(_Block):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # a casting hook's moves, unrolled (a break in a loop skips the frame): each a break, then torch assigns every
        # parameter's `.data` outside the graph
        self.to(torch.float16)
        self.to(torch.bfloat16)
        self.to(torch.float64)
        self.to(torch.float8_e4m3fn)
        self.to(torch.float32)
        return self.down(self.up(x))


class Fielded(torch.nn.Module):
    """A denoiser taking its inputs as a modular denoise block passes them: latents by position, the rest by keyword,
    Python values among them (QwenImage's `img_shapes`, `return_dict`)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, latents: list[torch.Tensor], timestep: torch.Tensor, img_shapes: list[tuple[int, int]],
                return_dict: bool = True) -> tuple[torch.Tensor]:  # fmt: skip
        height, width = img_shapes[0]
        return (self.linear(latents[0]) * timestep * (height / width),)


class FieldedListing(Fielded):
    def forward(self, latents: list[torch.Tensor], timestep: torch.Tensor, img_shapes: list[tuple[int, int]],
                return_dict: bool = True) -> tuple[torch.Tensor]:  # fmt: skip
        scale = latents[0].abs().max().tolist()  # break: tolist among the fields
        return super().forward([latents[0] / (1.0 + scale)], timestep, img_shapes, return_dict)


def _called_by_signature(module: torch.nn.Module, latents: torch.Tensor, step: int) -> None:
    """The call Modular Diffusers' denoise blocks make (QwenImage's, LTX2's, Cosmos3's, Wan Animate 2's): of the fields
    they hold, only those `inspect.signature(transformer.forward)` names are passed."""
    fields = {"timestep": torch.tensor(1.0 - step / 4), "img_shapes": [(2, 4)], "guidance_scale": 4.0,
              "prompt_embeds_mask": None}  # fmt: skip
    accepted = set(inspect.signature(module.forward).parameters)
    module([latents], **{name: value for name, value in fields.items() if name in accepted}, return_dict=False)


def _guarded_by_signature(module: torch.nn.Module, backend: str, device: torch.device):
    where = for_checks(device, ("graph_breaks",))
    module = module.to(where)
    with torch.no_grad(), nosync_guard(SimpleNamespace(transformer=module), checks=("graph_breaks",),
                                       backend=backend) as g:  # fmt: skip
        for step in range(3):
            with g.step():
                try:
                    _called_by_signature(module, torch.randn(2, 8, device=where), step)
                except RuntimeError as exc:  # fail_on_recompile ends the step, as in `_guarded`
                    if "Detected recompile" not in str(exc):
                        raise
                    g.absorb(exc)
    return g.report


def _guarded(module: torch.nn.Module, x: torch.Tensor, checks: tuple[str, ...], backend: str = "emulate"):
    pipe = SimpleNamespace(transformer=module)
    with torch.no_grad(), nosync_guard(pipe, checks=checks, backend=backend) as g:
        for step in range(3):
            with g.step():
                try:
                    module(x + step)
                except RuntimeError as exc:  # fail_on_recompile ends the step, as it ends a pipeline call
                    if "Detected recompile" not in str(exc):
                        raise
                    g.absorb(exc)
    return g.report


@pytest.mark.parametrize(
    ("cls", "marker"), [(Branchy, "break: branch"), (Printing, "break: print"), (Listing, "break: tolist")]
)
def test_graph_breaks_are_what_explain_reports(cls, marker: str) -> None:
    module, x = cls(), torch.randn(2, 8)
    with torch.no_grad():
        explained = torch._dynamo.explain(module)(x)  # the same module and first input as the guarded run
    torch._dynamo.reset()
    reference = {
        (str(r.reason).strip().splitlines()[0][:300], _place(r.user_stack[-1])) for r in explained.break_reasons
    }
    report = _guarded(module, x, ("graph_breaks",))
    ours = {(f.detail, f"{os.path.realpath(f.filename)}:{f.lineno}") for f in report.of_kind("graph_break")}
    assert ours == reference and reference, (ours, reference)
    assert _line(cls.forward, marker) in {f"{os.path.realpath(f.filename)}:{f.lineno}" for f in report.failures}
    # three steps may take the other side of a branch: its graph is compiled then, which one explain call never sees
    assert report.metrics["graph_count"] >= explained.graph_count
    assert report.passed is False


@pytest.mark.parametrize("checks", [("recompiles",), ("graph_breaks",)])
def test_a_recompile_between_steps_is_caught_at_its_line(checks, backend: str, device: torch.device) -> None:
    where = for_checks(device, ("graph_breaks",))  # graph checks run on the plain CPU under emulation
    module, x = Counting().to(where), torch.randn(2, 8, device=where)
    report = _guarded(module, x, checks, backend)
    recompiles = report.of_kind("recompile")
    assert [f.step for f in recompiles] == [1, 2], report.findings  # every call after the first recompiles
    assert f"{os.path.realpath(recompiles[0].filename)}:{recompiles[0].lineno}" == _line(Counting.forward, "recompile")
    assert "recompile:" in recompiles[0].detail and report.passed is False


@pytest.mark.parametrize("checks", [("recompiles",), ("graph_breaks",)])
def test_the_clean_twin_compiles_once_and_passes(checks, backend: str, device: torch.device) -> None:
    where = for_checks(device, ("graph_breaks",))
    report = _guarded(Clean().to(where), torch.randn(2, 8, device=where), checks, backend)
    assert report.findings == [] and report.passed, report.findings
    assert report.metrics["compiles_per_step"] == {"0": 1}


def test_two_input_shapes_in_the_first_step_are_two_graphs_and_no_break(backend: str, device: torch.device) -> None:
    """True CFG with a negative prompt shorter than the prompt: two calls of other shapes in each step, two graphs
    compiled in the first, none later; no graph break, and the break count says so."""
    where = for_checks(device, ("graph_breaks",))
    module = Clean().to(where)
    pipe = SimpleNamespace(transformer=module)
    with torch.no_grad(), nosync_guard(pipe, checks=("graph_breaks",), backend=backend) as g:
        for step in range(3):
            with g.step():
                module(torch.randn(2, 8, device=where) + step)  # the prompt's batch
                module(torch.randn(1, 8, device=where) + step)  # the negative's, of another size
    report = g.report
    assert report.passed and report.findings == [], report.findings
    assert report.metrics["compiles_per_step"] == {"0": 2}
    assert (report.metrics["graph_count"], report.metrics["graph_break_count"]) == (2, 0)


def test_the_break_count_is_the_breaks(backend: str, device: torch.device) -> None:
    where = for_checks(device, ("graph_breaks",))
    report = _guarded(Printing().to(where), torch.randn(2, 8, device=where), ("graph_breaks",), backend)
    assert report.metrics["graph_break_count"] == len(report.of_kind("graph_break")) == 1


def test_a_denoiser_called_by_its_signature_gets_every_field_it_names(backend: str, device: torch.device) -> None:
    """Clean twin: the guard's compiled forward keeps the denoiser's signature. A forward of `*args, **kwargs` named
    none of the fields, so the block passed none and the call raised (QwenImage's `cannot unpack non-iterable
    NoneType`, Cosmos3's `missing 11 required positional arguments`, in the graph check only)."""
    report = _guarded_by_signature(Fielded(), backend, device)
    assert report.passed and report.findings == [], report.findings
    assert report.metrics["compiles_per_step"] == {"0": 1}


def test_a_break_in_a_denoiser_called_by_its_signature_is_found_at_its_line(backend: str, device: torch.device) -> None:
    """Bug twin: the same call into a forward that breaks; the check reaches its verdict, the break at its line."""
    report = _guarded_by_signature(FieldedListing(), backend, device)
    breaks = report.of_kind("graph_break")
    assert breaks and report.passed is False, report.findings
    assert _place(breaks[0]) == _line(FieldedListing.forward, "break"), breaks


def test_on_the_emulated_device_the_check_says_it_did_not_run(device: torch.device) -> None:
    if device.type != "emu":
        pytest.skip("the emulated device only")
    report = _guarded(Counting().to(device), torch.randn(2, 8, device=device), ("recompiles",))
    assert report.passed is False and [f.kind for f in report.findings] == ["not_checked"]  # nothing else was seen
    assert "cannot be checked on the emulated device" in report.not_checked[0]


def test_without_a_denoiser_the_check_says_it_did_not_run() -> None:
    with nosync_guard(checks=("graph_breaks",), backend="emulate") as g, g.step():
        pass
    assert g.report.passed is False and "needs" not in g.report.not_checked[0]
    assert "guard a pipeline" in g.report.not_checked[0]


def test_a_frame_past_its_recompile_limit_is_a_recompile_at_its_line(
    backend: str, device: torch.device, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """Bug twin: twelve widths recompile the resumed frame past the limit (8); dynamo runs the rest uncompiled. The
    finding says it: dynamo's own warning no longer spills raw into the terminal (nor into a test's captured log)."""
    import logging

    where = for_checks(device, ("graph_breaks",))
    handlers = list(logging.getLogger("torch._dynamo.convert_frame").handlers)
    filters = list(logging.getLogger("torch._dynamo.convert_frame").filters)
    module = Widening(list(range(9, 21))).to(where)
    report = _guarded(module, torch.randn(2, 8, device=where), ("graph_breaks",), backend)
    assert "hit config.recompile_limit" not in capfd.readouterr().err + caplog.text
    assert logging.getLogger("torch._dynamo.convert_frame").filters == filters  # the detector's filter is gone
    limits = [f for f in report.of_kind("recompile") if f.detail.startswith("recompile limit")]
    assert len(limits) == 1 and limits[0].step == 0, report.findings
    assert f"{os.path.realpath(limits[0].filename)}:{limits[0].lineno}" == _line(_Block.forward, "limit")
    assert "recompile_limit (8)" in limits[0].detail and report.passed is False
    assert logging.getLogger("torch._dynamo.convert_frame").handlers == handlers  # the detector's handler is gone


def test_a_limit_hit_with_dynamo_warnings_silenced_still_fails(backend: str, device: torch.device) -> None:
    """Bug twin: with dynamo's logger above WARNING (`TORCH_LOGS="-dynamo"`) its warning never reaches the handler;
    dynamo's counters still count the hit, so it is a finding without a place, not a pass."""
    import logging

    where = for_checks(device, ("graph_breaks",))
    dynamo_logger = logging.getLogger("torch._dynamo")
    level = dynamo_logger.level
    dynamo_logger.setLevel(logging.ERROR)
    try:
        report = _guarded(Widening(list(range(9, 21))).to(where), torch.randn(2, 8, device=where), ("graph_breaks",),
                          backend)  # fmt: skip
    finally:
        dynamo_logger.setLevel(level)
    limits = [f for f in report.of_kind("recompile") if f.detail.startswith("recompile limit")]
    assert len(limits) == 1 and "was not logged" in limits[0].detail and report.passed is False, report.findings


def test_the_same_stack_of_one_width_stays_within_the_limit(backend: str, device: torch.device) -> None:
    where = for_checks(device, ("graph_breaks",))
    report = _guarded(Widening([16] * 12).to(where), torch.randn(2, 8, device=where), ("graph_breaks",), backend)
    assert report.of_kind("recompile") == [] and report.metrics["compiles_per_step"] == {"0": 1}, report.findings


def test_under_the_emulation_dynamo_traces_torch_not_the_emulation(backend: str, device: torch.device) -> None:
    """Bug twin: the emulation installs a Python `Tensor.data` setter for the process. A plain-CPU graph check that
    let dynamo see it compiled that setter once per dtype and shape, past the recompile limit: a finding in the
    emulation's own code, which no GPU has (Flux under layerwise casting). Traced with torch's own `Tensor.data`, what
    is left is the model's: its frames, recompiled per width."""
    from pytest_nosync.emulation import tensor as emulated_tensor

    if device.type != "emu":
        pytest.skip("the emulated device only")
    stack = Widening(list(range(9, 21)))
    for block in stack.blocks:
        block.__class__ = _Recast
    report = _guarded(stack, torch.randn(2, 8), ("graph_breaks",), backend)
    recompiles = report.of_kind("recompile")
    emulation = os.path.realpath(emulated_tensor.__file__)
    assert recompiles and not [f for f in report.findings if emulation in f.detail or f.filename == emulation], (
        report.findings
    )
    assert {os.path.realpath(f.filename) for f in recompiles} == {os.path.realpath(__file__)}, recompiles


_IMPORTED_AFTER_THE_EMULATION = """
import json, sys, torch
from pytest_nosync.emulation import device
assert "torch._dynamo" not in sys.modules
device.install()  # an emulated session installs the device before anything imports dynamo
from types import SimpleNamespace
from pytest_nosync import nosync_guard

class Indexing(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = self.linear(x)
        index = torch.tensor([[0] * 4 + [1] * 4], device=x.device, dtype=torch.int)  # QwenImage's modulate_index
        return y * index

module = Indexing()
with torch.no_grad(), nosync_guard(SimpleNamespace(transformer=module), checks=("graph_breaks",),
                                   backend="emulate") as g:
    for step in range(3):
        with g.step():
            module(torch.randn(2, 8))
print(json.dumps([[f.kind, f.detail] for f in g.report.findings] + [g.report.metrics["graph_count"]]))
"""


def test_a_dynamo_imported_after_the_emulation_still_knows_torch_tensor(device: torch.device) -> None:
    """Bug twin: a dynamo first imported under the emulation took its `torch.tensor` wrapper for torch.tensor. Putting
    the builtin back while compiling made every `torch.tensor(...)` a break there (QwenImage Edit's emulated graph
    check; none on a GPU). A fresh process, as an emulated session starts."""
    import json
    import subprocess
    import sys

    if device.type != "emu":
        pytest.skip("the emulated device only")
    run = subprocess.run([sys.executable, "-c", _IMPORTED_AFTER_THE_EMULATION], capture_output=True, text=True,
                         timeout=300, check=False)  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    *findings, graphs = json.loads(run.stdout.strip().splitlines()[-1])
    assert findings == [] and graphs == 1, (findings, graphs)
