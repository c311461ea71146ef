"""The stand-in testers (census.standin_testers) on the installed diffusers: each builds its class from tiny seeded
models, the same weights every build, and a plain call with its inputs, after its prelude (DiffEdit's), returns (or
raises diffusers' own bug, verified at its line: Versatile Diffusion's dual-guided UNet); every stand-in is of a class
diffusers exports."""

from __future__ import annotations

import pytest
import torch

from pytest_nosync import nosync_guard
from pytest_nosync.census import standin_testers, testers, untested
from pytest_nosync.census.diffusers_bugs import own_bug
from pytest_nosync.suite.targets.base import CallContext


@pytest.mark.parametrize("standin", standin_testers.TESTERS, ids=lambda cls: cls.__name__)
def test_each_stand_in_builds_its_class_seeded_and_its_plain_call_returns(standin: type) -> None:
    tester = testers.Tester(standin)  # as the census drives a sibling
    first, second = tester.components(), tester.components()
    models = [name for name, value in first.items() if isinstance(value, torch.nn.Module)]
    assert models
    for name in models:
        for a, b in zip(first[name].state_dict().values(), second[name].state_dict().values(), strict=True):
            assert torch.equal(a, b), name
    pipe = tester.build(torch.device("cpu"), torch.float32)
    pipe.set_progress_bar_config(disable=True)
    ctx = CallContext(torch.device("cpu"), torch.float32)
    try:
        tester.prelude(pipe, ctx)  # DiffEdit's mask and inverted latents, which its call takes
        with torch.no_grad():
            output = pipe(**tester.call_kwargs(pipe, ctx))
    except Exception as exc:  # only where diffusers' own bug, verified at its line, raises whatever it is given
        site = untested._raise_site(exc)
        assert own_bug(exc, site), f"{type(exc).__name__}: {exc} at {site}"
        return
    assert output is not None


def test_every_family_module_gives_a_stand_in_of_an_exported_class() -> None:
    exported = {e.name: e for e in untested.exported_pipelines()}
    names = {standin.pipeline_class.__name__ for standin in standin_testers.TESTERS}
    assert len(standin_testers.TESTERS) >= len(standin_testers.FAMILIES)
    assert names <= set(exported)
    modules = {standin.__module__.rsplit(".", 1)[-1] for standin in standin_testers.TESTERS}
    assert modules == set(standin_testers.FAMILIES)


def test_unclips_three_stages_together_are_its_denoiser(monkeypatch: pytest.MonkeyPatch) -> None:
    """unCLIP runs a prior, a decoder and a super-resolution stage whose first UNet steps all but the last step: no
    module is called in every step; the four usual names together are (without the super-resolution names, none)."""
    from pytest_nosync.census.standin_testers.unclip import UnCLIPStandIn

    tester = testers.Tester(UnCLIPStandIn)
    ctx = CallContext(torch.device("cpu"), torch.float32, steps=2)
    pipe = tester.build(ctx.device, ctx.dtype)
    pipe.set_progress_bar_config(disable=True)
    assert tester.calibrate(pipe, ctx).denoiser == "prior,decoder,super_res_first,super_res_last"
    without = tuple(n for n in testers.DENOISER_NAMES if not n.startswith("super_res"))
    monkeypatch.setattr(testers, "DENOISER_NAMES", without)
    with pytest.raises(testers.NotDrivable, match="no module of UnCLIPPipeline is called once per step"):
        tester.calibrate(pipe, ctx)


def test_paradigms_runs_one_step_an_iteration_as_num_inference_steps_asks() -> None:
    """Paradigms' loop advances a window of `parallel` steps an iteration and never calls its scheduler's `step()`: its
    stand-in's window of one makes each iteration one step, counted alike by the calibration (its bar's updates)
    and by a guard (closed at the bar's update), as many as num_inference_steps asks."""
    from pytest_nosync.census.standin_testers.stable_diffusion_variants import ParadigmsStandIn

    tester = testers.Tester(ParadigmsStandIn)
    ctx = CallContext(torch.device("cpu"), torch.float32, steps=3)
    pipe = tester.build(ctx.device, ctx.dtype)
    pipe.set_progress_bar_config(disable=True)
    calibration = tester.calibrate(pipe, ctx)
    assert (calibration.denoiser, calibration.slope, calibration.offset) == ("unet", 1.0, 0.0)
    kwargs = tester.call_kwargs(pipe, ctx)
    with nosync_guard(pipe, backend="emulate", checks=("syncs",), denoiser="unet") as g, torch.no_grad():
        pipe(**kwargs)
    assert kwargs["num_inference_steps"] == g.report.steps == 3
    assert not [reason for reason in g.report.not_checked if "denoising step(s)" in reason]


def test_unidiffusers_stand_in_generates_an_image_from_a_prompt_with_a_gpt2_tokenizer_of_its_own() -> None:
    """UniDiffuser's stand-in is driven text-to-image (the mode its prompt selects): an image and no text; its GPT-2
    tokenizer, built offline, ends its 1000 ids with `<|endoftext|>` (bos and eos) and gives a prompt back."""
    from pytest_nosync.census.standin_testers.tiny import PROMPT, gpt2_tokenizer
    from pytest_nosync.census.standin_testers.unidiffuser import UniDiffuserStandIn

    tokenizer = gpt2_tokenizer()
    assert (len(tokenizer), tokenizer.bos_token_id, tokenizer.eos_token_id) == (1000, 999, 999)
    assert tokenizer.decode(tokenizer(PROMPT).input_ids) == PROMPT
    tester = testers.Tester(UniDiffuserStandIn)
    ctx = CallContext(torch.device("cpu"), torch.float32)
    pipe = tester.build(ctx.device, ctx.dtype)
    pipe.set_progress_bar_config(disable=True)
    with torch.no_grad():
        output = pipe(**tester.call_kwargs(pipe, ctx))
    assert output.images.shape == (1, 32, 32, 3) and output.text is None
