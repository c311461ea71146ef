"""The caches and the offloading diffusers exports that the first scenarios left out, each with its twins on real
diffusers code under the CPU emulation: TextKVCache keeps a text-conditioned model's steps clean (NucleusMoE, the one
whose blocks it supports) and does not apply to Flux's; SeaCache syncs in every step on Wan text-to-video (its gate
reads the spectral indicator's distance and mean gain on the host) and does not apply to a model diffusers has no
adapter for, nor where diffusers has no SeaCacheConfig; ComponentsManager's auto offloading keeps a modular pipeline's
steps clean and does not apply to a classic pipeline, nor where the device does not say its free memory."""

from __future__ import annotations

import types

import pytest
import torch

from pytest_nosync import NotApplicable, apply_scenario, nosync_guard
from pytest_nosync.scenarios import SCENARIOS, parse
from pytest_nosync.source_identity import package_path
from pytest_nosync.suite.scenarios import feature_of, sea_cache_config
from pytest_nosync.suite.targets.base import CallContext
from pytest_nosync.suite.targets.registry import TARGETS, build_pipeline

SEA_CACHE = "diffusers/hooks/sea_cache.py"
SEA_GATE = f"{SEA_CACHE}:226"  # distance += float((numerator / denominator).detach().cpu())
SEA_FILTER = f"{SEA_CACHE}:387"  # if torch.isfinite(mean_gain) and mean_gain > 0:
MODEL_TO = "models/modeling_utils.py:1640"  # ModelMixin.to: return super().to(*args, **kwargs)


def _syncs(pipe: object, kwargs: dict, backend: str) -> list[tuple[str, str, int | None]]:
    """The syncs of one guarded call: (kind, file:line inside its import root, step)."""
    with nosync_guard(pipe, checks=("syncs",), backend=backend) as g, torch.no_grad():
        pipe(**kwargs, callback_on_step_end=g.callback_on_step_end)
    return [(f.kind, f"{package_path(f.where.file)}:{f.where.line}", f.step) for f in g.report.failures]


# ---- TextKVCache ---------------------------------------------------------------------------------------------------
def _nucleus(device: torch.device) -> object:
    """A tiny NucleusMoE-Image pipeline (its blocks are the ones TextKVCache hooks), as diffusers' tester builds it,
    without the text encoder: the call passes prompt embeddings."""
    from diffusers import (
        AutoencoderKLQwenImage,
        FlowMatchEulerDiscreteScheduler,
        NucleusMoEImagePipeline,
        NucleusMoEImageTransformer2DModel,
    )

    torch.manual_seed(0)
    transformer = NucleusMoEImageTransformer2DModel(
        patch_size=2, in_channels=16, out_channels=4, num_layers=2, attention_head_dim=16, num_attention_heads=4,
        joint_attention_dim=16, axes_dims_rope=(8, 4, 4), moe_enabled=False, capacity_factors=[8.0, 8.0],
    )  # fmt: skip
    vae = AutoencoderKLQwenImage(
        base_dim=24, z_dim=4, dim_mult=[1, 2, 4], num_res_blocks=1, temperal_downsample=[False, True],
        latents_mean=[0.0] * 4, latents_std=[1.0] * 4,
    )  # fmt: skip
    pipe = NucleusMoEImagePipeline(transformer=transformer, scheduler=FlowMatchEulerDiscreteScheduler(), vae=vae,
                                   text_encoder=None, processor=None)  # fmt: skip
    pipe.set_progress_bar_config(disable=True)
    return pipe.to(device)


def _nucleus_call(device: torch.device) -> dict:
    embeds = {name: torch.randn(1, 7, 16, generator=torch.Generator().manual_seed(seed)).to(device)
              for seed, name in enumerate(("prompt_embeds", "negative_prompt_embeds"))}  # fmt: skip
    masks = {f"{name}_mask": torch.ones(1, 7, dtype=torch.long, device=device) for name in embeds}
    return {**embeds, **masks, "guidance_scale": 4.0, "height": 32, "width": 32, "num_inference_steps": 3,
            "output_type": "latent", "generator": torch.Generator().manual_seed(0)}  # fmt: skip


def test_text_kv_cache_keeps_a_supported_models_steps_clean(backend: str, device: torch.device) -> None:
    """Clean twin: the text keys and values of both prompts computed at the first step, reused by the others."""
    pipe = _nucleus(device)
    plain = _syncs(pipe, _nucleus_call(device), backend)
    pipe = _nucleus(device)
    apply_scenario(pipe, "text_kv_cache", device=device)
    blocks = [m for m in pipe.transformer.modules() if type(m).__name__ == "NucleusMoEImageTransformerBlock"]
    assert blocks and all(m._diffusers_hook.get_hook("text_kv_cache_block") for m in blocks)
    projected: list[int] = []  # the text projections computed: once per prompt, not once per step and prompt
    blocks[0].encoder_proj.register_forward_hook(lambda *_: projected.append(1))
    assert _syncs(pipe, _nucleus_call(device), backend) == plain  # no sync the plain pipeline does not make
    # the positive and the negative prompt's, over three steps (six without the cache). The hook keys a prompt by its
    # tensor's address, and the emulated device's tensors have none (data_ptr() is 0): there both share one entry
    assert len(projected) == (2 if device.type == "cuda" else 1)


def test_text_kv_cache_does_not_apply_to_a_model_without_the_blocks_it_supports(device: torch.device) -> None:
    pipe = build_pipeline(TARGETS["flux"], device, torch.float32)
    with pytest.raises(NotApplicable, match="text_kv_cache found no block or attention of FluxTransformer2DModel"):
        apply_scenario(pipe, "text_kv_cache", device=device)


# ---- SeaCache ------------------------------------------------------------------------------------------------------
def test_sea_cache_syncs_in_every_step_on_wan_text_to_video(backend: str, device: torch.device) -> None:
    """Bug twin: SeaCache's gate reads the indicator's distance (`float(...cpu())`) and its filter tests the mean gain
    (`if torch.isfinite(mean_gain) and mean_gain > 0`) on the host, in every step; the plain Wan call makes neither."""
    wan = TARGETS["wan"]
    kwargs = lambda pipe: wan.call_kwargs(pipe, CallContext(device, torch.float32, steps=3))  # noqa: E731
    pipe = build_pipeline(wan, device, torch.float32)
    plain = _syncs(pipe, kwargs(pipe), backend)
    assert not [s for s in plain if SEA_CACHE in s[1]]
    pipe = build_pipeline(wan, device, torch.float32)
    apply_scenario(pipe, "sea_cache", device=device)
    sea = [(kind, where, step) for kind, where, step in _syncs(pipe, kwargs(pipe), backend) if SEA_CACHE in where]
    assert {kind for kind, _, _ in sea} == {"dtoh_sync"} and {step for _, _, step in sea} == {0, 1, 2}, sea
    assert {where for _, where, _ in sea} == {SEA_GATE, SEA_FILTER}, sea


def test_sea_cache_does_not_apply_to_a_model_diffusers_has_no_adapter_for(device: torch.device) -> None:
    pipe = build_pipeline(TARGETS["flux"], device, torch.float32)
    with pytest.raises(NotApplicable, match="sea_cache: diffusers has no model adapter for FluxTransformer2DModel"):
        apply_scenario(pipe, "sea_cache", device=device)
    assert not pipe.transformer.is_cache_enabled  # the hooks it had registered are gone


def test_sea_cache_is_a_sentence_where_diffusers_has_no_sea_cache_config() -> None:
    older = types.SimpleNamespace(__version__="0.36.0")  # a diffusers exporting no SeaCacheConfig
    with pytest.raises(NotApplicable, match=r"^sea_cache: diffusers 0\.36\.0 has no SeaCacheConfig$"):
        sea_cache_config(older, SCENARIOS["sea_cache"], None, None)


def test_sea_cache_takes_the_parameters_its_config_documents() -> None:
    import diffusers

    (scenario,) = parse("sea_cache:threshold=0.5:residual_order=0:power_exp=2.0")
    config = sea_cache_config(diffusers, scenario, None, None)
    assert (config.threshold, config.residual_order, config.power_exp, config.retention_steps) == (0.5, 0, 2.0, 1)


# ---- ComponentsManager's auto offloading ---------------------------------------------------------------------------
def _modular_flux(device: torch.device) -> object:
    """A tiny Flux modular pipeline: diffusers' Flux blocks with the suite's tiny Flux components, without the text
    encoder's block (the call passes prompt embeddings, as the suite's Flux call does)."""
    from diffusers.modular_pipelines import FluxAutoBlocks

    from pytest_nosync.suite.targets import flux

    blocks = FluxAutoBlocks()
    blocks.sub_blocks.pop("text_encoder")
    pipe = blocks.init_pipeline()
    pipe.update_components(**{name: c for name, c in flux.build_components().items() if c is not None})
    return pipe


@pytest.mark.parametrize(("free", "moved"), [(64 << 30, False), (0, True)], ids=["room-for-all", "room-for-one"])
def test_components_auto_offload_moves_a_model_in_a_step_only_where_the_device_has_no_room_for_it(
    backend: str, device: torch.device, monkeypatch: pytest.MonkeyPatch, free: int, moved: bool
) -> None:
    """Each model is moved to the device as it first runs, and left there while the device has room for it. Clean
    twin: with room for all, a second call's steps move nothing. Bug twin: with room for one model only, the VAE's
    decode moved the transformer aside, and every call moves it back in its first step. The device says its free
    memory as a GPU would (the emulated one cannot: the scenario does not apply there, below)."""
    from diffusers.utils import torch_utils

    monkeypatch.setattr(torch_utils.TorchDeviceBackend, "mem_get_info", lambda self: (free, 80 << 30))
    pipe = _modular_flux(device)
    scenario = SCENARIOS["components_auto_offload"]
    feature_of(scenario)(scenario, pipe, [pipe.transformer], device)
    assert pipe.transformer.device.type == "cpu" and hasattr(pipe.transformer, "_hf_hook")  # diffusers' hook is on
    kwargs = lambda: TARGETS["flux"].call_kwargs(pipe, CallContext(device, torch.float32, steps=2))  # noqa: E731
    with torch.no_grad():
        pipe(**kwargs())  # the first call moves every model in
    with nosync_guard(pipe, checks=("syncs",), backend=backend) as g, torch.no_grad():
        pipe(**kwargs())
    in_steps = {(f.kind, f"{f.where.file.rpartition('diffusers/')[2]}:{f.where.line}", f.step)
                for f in g.report.failures if f.step is not None}  # fmt: skip
    # the transformer moved back in (host to device) at `.to()` in the first step; the emulation also counts the VAE's
    # move out there, which the H200 did not report inside a step
    if moved:
        assert ("htod_sync", MODEL_TO, 0) in in_steps and {(where, step) for _, where, step in in_steps} == {
            (MODEL_TO, 0)
        }, in_steps
    else:
        assert in_steps == set(), in_steps


def test_components_auto_offload_does_not_apply_to_a_classic_pipeline() -> None:
    scenario = SCENARIOS["components_auto_offload"]
    pipe = build_pipeline(TARGETS["flux"], "cpu", torch.float32)
    with pytest.raises(NotApplicable, match="components_auto_offload: FluxPipeline is no ModularPipeline"):
        feature_of(scenario)(scenario, pipe, [pipe.transformer], torch.device("cuda"))


@pytest.mark.parametrize("backend", ["emulate"], indirect=True)  # a GPU says it: only the emulated device cannot
def test_components_auto_offload_does_not_apply_where_the_device_does_not_say_its_free_memory(
    device: torch.device,
) -> None:
    """Bug twin: turned on there, diffusers raises (an internal assert of torch's allocator on the emulated device), an
    `error` finding that is no bug of the pipeline."""
    with pytest.raises(NotApplicable, match=r"components_auto_offload cannot run on the .*: ComponentsManager's auto "
                       "offloading asks the device for its free memory"):  # fmt: skip
        apply_scenario(_modular_flux(device), "components_auto_offload", device=device)
