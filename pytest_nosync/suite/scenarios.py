"""Turning a scenario (pytest_nosync.scenarios) on for a built pipeline, with diffusers' own API: its cache configs,
offloading, group offloading, layerwise casting, regional compilation, attention backends, a PEFT adapter. Never a
re-implementation: what is checked is the feature as users turn it on.

`apply` raises NotApplicable (one sentence) where the scenario does not apply to the pipeline — the denoiser lacks the
mixin that carries the feature, the hook supports none of its blocks, a backend is not installed, the emulation cannot
run it — and lets any other exception of the feature through: a raise there is the pipeline's, an `error` finding.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch

from ..detection import devices
from ..emulation import cuda_map, is_emulated
from ..scenarios import AUTO, PLAIN, Scenario, UnknownScenario, parse


class NotApplicable(Exception):
    """The scenario does not apply to this pipeline here; the message is the reason, one sentence."""


def apply_scenario(pipeline: Any, scenario: str, *, denoiser: str = "transformer", device: Any = None) -> None:
    """Turn one scenario on for your own built pipeline, as the plugin does for its (library use):

        apply_scenario(pipe, "first_block_cache:threshold=0.3")
        with nosync_guard(pipe) as g:
            pipe(..., callback_on_step_end=g.callback_on_step_end)

    `scenario`: a name of pytest_nosync.scenarios.SCENARIOS, with `:key=value` settings; `device`: where the
    pipeline runs (default: the active backend's, `execution_device()`). Raises NotApplicable with its reason where
    the scenario does not apply, UnknownScenario for a name or setting it does not know. An attention backend also
    becomes the process's default, as diffusers' `set_attention_backend` makes it (the plugin's own runs put the
    default back: `kept_process_wide`)."""
    (chosen, *more) = parse(scenario)
    if more:
        raise UnknownScenario(f"apply_scenario turns one scenario on, got {scenario!r}")
    apply(chosen, pipeline, denoiser, torch.device(device) if device is not None else devices.execution_device())


def apply(scenario: Scenario, pipe: Any, denoiser: str, device: torch.device) -> None:
    """Turn `scenario` on for `pipe` (built and on `device`), whose denoiser is `denoiser` (comma-separated: each)."""
    if scenario.name == PLAIN:
        return
    if scenario.cuda_only and device.type != "cuda":
        where = "the emulated device" if device.type != "cpu" else "the CPU"
        raise NotApplicable(f"{scenario.name} cannot run on {where}: {scenario.cuda_only}")
    if scenario.not_on_cpu and device.type == "cpu":
        raise NotApplicable(f"{scenario.name} cannot run on the CPU: {scenario.not_on_cpu}")
    modules = [getattr(pipe, name.strip(), None) for name in denoiser.split(",")]
    if not modules or any(not isinstance(m, torch.nn.Module) for m in modules):
        raise NotApplicable(f"{scenario.name}: the pipeline has no denoiser module {denoiser!r}")
    feature_of(scenario)(scenario, pipe, modules, device)


def feature_of(scenario: Scenario) -> Callable[[Scenario, Any, list[Any], torch.device], None]:
    """The function of this module that turns `scenario`'s feature on: the one its entry names (`Scenario.feature`)."""
    return _named(scenario.feature)


def _named(name: str) -> Callable[..., Any]:
    """A function of this module that a scenario's entry names (its `feature`, its `config`). The entry names it, as a
    check's entry names its detector module, because pytest_nosync.scenarios is vocabulary: the option table reads it
    with the plugin off, where importing this module (torch, then diffusers) is the cost the plugin must not have."""
    return globals()[name]


def plain(scenario: Scenario, pipe: Any, modules: list[Any], device: torch.device) -> None:
    pass


# ---- cache hooks ---------------------------------------------------------------------------------------------------
def cache(scenario: Scenario, pipe: Any, modules: list[Any], device: torch.device) -> None:
    # plugin cheap: every checking run imports this module (calls_context), diffusers (seconds) only where it applies
    import diffusers

    for module in modules:
        if not callable(getattr(module, "enable_cache", None)):
            raise NotApplicable(f"{scenario.name}: {type(module).__name__} has no enable_cache (it is no CacheMixin)")
        config = _named(scenario.config)(diffusers, scenario, pipe, module)
        try:
            module.enable_cache(config)
        except ValueError as exc:
            if "not registered" in str(exc):  # the hook finds its blocks in a registry this model's are not in
                blocks = f"{type(module).__name__}'s blocks"
                raise NotApplicable(f"{scenario.name} does not support {blocks}: {exc}") from exc
            raise
        if not _hooked_children(module):
            raise NotApplicable(
                f"{scenario.name} found no block or attention of {type(module).__name__} it supports: nothing to cache"
            )


def _timestep(scenario: Scenario, pipe: Any) -> Callable[[], Any]:
    if not hasattr(type(pipe), "current_timestep"):
        raise NotApplicable(f"{scenario.name} needs the pipeline's current_timestep, which {type(pipe).__name__} lacks")
    return lambda: pipe.current_timestep


WHOLE_SCHEDULE = (-1, 1_000_000)  # the timestep ranges a hook is active in: every step of a tiny call
# FasterCache's attention reuse as diffusers' docs and tests set it: every step after the first (timestep ~1000). Its
# block hook skips attention in range from the first step on and, for a guidance-distilled model, reads a cache that
# only a computed step fills: active from the first step, it raised on every such model.
AFTER_THE_FIRST_STEP = (-1, 901)


def _mag_ratios(diffusers: Any) -> Any:
    from diffusers.hooks.mag_cache import FLUX_MAG_RATIOS  # plugin cheap, as in `cache`

    return FLUX_MAG_RATIOS


def guidance_distilled(scenario: Scenario, pipe: Any, denoiser: Any) -> bool:
    """FasterCacheConfig's `is_guidance_distilled`, which its docstring asks for on a guidance-distilled model (its
    denoiser-level hook then looks for no unconditional branch in the batch, "as there is none"): the scenario's setting
    where given (the census gives a tester's own, as diffusers' tests set it for that pipeline), else what the
    pipeline's configs say of it — a denoiser that embeds the guidance scale (`guidance_embeds`: Flux dev, HunyuanVideo)
    or a pipeline registered as distilled (`is_distilled`: Flux 2 Klein)."""
    setting = scenario.value("is_guidance_distilled")
    if setting != AUTO:
        return setting == "true"
    said = (getattr(getattr(denoiser, "config", None), "guidance_embeds", False),
            getattr(getattr(pipe, "config", None), "is_distilled", False))  # fmt: skip
    return any(value is True for value in said)


# The diffusers config of each cache scenario, named by its entry (`Scenario.config`): (diffusers, scenario, pipeline,
# the model its hook goes on) → the config `enable_cache` takes.
def first_block_cache_config(d: Any, s: Scenario, pipe: Any, module: Any) -> Any:
    return d.FirstBlockCacheConfig(threshold=s.value("threshold"))


def pyramid_attention_broadcast_config(d: Any, s: Scenario, pipe: Any, module: Any) -> Any:
    return d.PyramidAttentionBroadcastConfig(
        spatial_attention_block_skip_range=s.value("spatial_attention_block_skip_range"),
        spatial_attention_timestep_skip_range=WHOLE_SCHEDULE,
        current_timestep_callback=_timestep(s, pipe),
    )


def faster_cache_config(d: Any, s: Scenario, pipe: Any, module: Any) -> Any:
    return d.FasterCacheConfig(
        spatial_attention_block_skip_range=s.value("spatial_attention_block_skip_range"),
        spatial_attention_timestep_skip_range=AFTER_THE_FIRST_STEP,
        unconditional_batch_skip_range=s.value("unconditional_batch_skip_range"),
        unconditional_batch_timestep_skip_range=WHOLE_SCHEDULE,
        current_timestep_callback=_timestep(s, pipe),
        attention_weight_callback=lambda _: 0.3,
        is_guidance_distilled=guidance_distilled(s, pipe, module),
        tensor_format="BFCHW"
        if "video" in type(pipe).__name__.lower() or hasattr(pipe, "vae_scale_factor_temporal")
        else "BCHW",
    )


def taylorseer_cache_config(d: Any, s: Scenario, pipe: Any, module: Any) -> Any:
    return d.TaylorSeerCacheConfig(
        cache_interval=s.value("cache_interval"),
        max_order=s.value("max_order"),
        disable_cache_before_step=s.value("disable_cache_before_step"),
    )


def mag_cache_config(d: Any, s: Scenario, pipe: Any, module: Any) -> Any:
    return d.MagCacheConfig(
        threshold=s.value("threshold"),
        max_skip_steps=s.value("max_skip_steps"),
        retention_ratio=s.value("retention_ratio"),
        mag_ratios=_mag_ratios(d),
        num_inference_steps=28,  # any call of at most 28 steps reads its step's ratio
    )


def text_kv_cache_config(d: Any, s: Scenario, pipe: Any, module: Any) -> Any:
    return _exported(d, s, "TextKVCacheConfig")()  # no parameters: it is exact, nothing to tune


def sea_cache_config(d: Any, s: Scenario, pipe: Any, module: Any) -> Any:
    return _exported(d, s, "SeaCacheConfig")(**s.settings())


def _exported(d: Any, s: Scenario, name: str) -> Any:
    """The config class diffusers exports as `name`; a diffusers without it is a sentence, not an AttributeError."""
    config = getattr(d, name, None)
    if config is None:
        raise NotApplicable(f"{s.name}: diffusers {d.__version__} has no {name}")
    return config


def adapted_cache(scenario: Scenario, pipe: Any, modules: list[Any], device: torch.device) -> None:
    """A cache hook that reads the denoiser's latents through a model adapter (SeaCache's `raw_vision_callback`).
    diffusers attaches its own for the models it knows (Cosmos 3, Wan text-to-video) and hooks every model's blocks,
    but without an adapter the hook runs fail-open on every call, warning once: a full call each step, nothing
    cached, so not applicable."""
    cache(scenario, pipe, modules, device)
    for module in modules:
        root = getattr(module, "_diffusers_hook", None)
        hooks = [hook for hook in getattr(root, "hooks", {}).values() if hasattr(hook, "raw_vision_callback")]
        if not any(hook.raw_vision_callback is not None for hook in hooks):
            module.disable_cache()
            raise NotApplicable(f"{scenario.name}: diffusers has no model adapter for {type(module).__name__} "
                                "(it has Cosmos 3's and Wan text-to-video's): it would cache nothing")  # fmt: skip


def _hooked_children(module: torch.nn.Module) -> int:
    """Submodules a diffusers hook was registered on (a cache hook that found nothing to hook registers none)."""
    return sum(
        1
        for child in module.modules()
        if child is not module and getattr(getattr(child, "_diffusers_hook", None), "hooks", None)
    )


# ---- offloading ----------------------------------------------------------------------------------------------------
def offload(scenario: Scenario, pipe: Any, modules: list[Any], device: torch.device) -> None:
    method = f"enable_{scenario.name}"  # enable_model_cpu_offload, enable_sequential_cpu_offload
    enable = getattr(pipe, method, None)
    if enable is None:
        raise NotApplicable(f"{scenario.name}: {type(pipe).__name__} has no {method}")
    enable(device=device)


def components_auto_offload(scenario: Scenario, pipe: Any, modules: list[Any], device: torch.device) -> None:
    """A modular pipeline's models under its ComponentsManager's auto offloading, as diffusers' modular docs turn it
    on: the manager the pipeline was made with, or one holding its models."""
    from diffusers.modular_pipelines import ComponentsManager, ModularPipeline  # plugin cheap, as in `cache`

    if not isinstance(pipe, ModularPipeline):
        raise NotApplicable(f"{scenario.name}: {type(pipe).__name__} is no ModularPipeline (a classic pipeline "
                            "offloads with enable_model_cpu_offload)")  # fmt: skip
    manager = pipe._components_manager
    if manager is None:
        manager = ComponentsManager()
        for name, component in pipe.components.items():
            if isinstance(component, torch.nn.Module):
                manager.add(name, component)
    manager.enable_auto_cpu_offload(device=device, memory_reserve_margin=scenario.value("memory_reserve_margin"))


def group_offload(scenario: Scenario, pipe: Any, modules: list[Any], device: torch.device) -> None:
    for module in modules:
        if not callable(getattr(module, "enable_group_offload", None)):
            raise NotApplicable(f"{scenario.name}: {type(module).__name__} has no enable_group_offload")
        if getattr(module, "_supports_group_offloading", True) is False:  # enable_group_offload refuses it, saying so
            raise NotApplicable(f"{scenario.name}: {type(module).__name__} does not support group offloading "
                                "(_supports_group_offloading = False)")  # fmt: skip
        if scenario.name == "group_offload_block":
            module.enable_group_offload(onload_device=device, offload_device="cpu", offload_type="block_level",
                                        num_blocks_per_group=scenario.value("num_blocks_per_group"))  # fmt: skip
        else:
            if not _pins(device):
                raise NotApplicable(f"{scenario.name}: its prefetch pins host memory, which {device.type} does "
                                    "only under the CUDA mapping (--nosync-map-cuda on)")  # fmt: skip
            module.enable_group_offload(onload_device=device, offload_device="cpu", offload_type="leaf_level",
                                        use_stream=True)  # fmt: skip


def _pins(device: torch.device) -> bool:
    """Whether `pin_memory()` works for `device`: on the emulated one, only the CUDA mapping makes it (a marked host
    tensor, so that a non_blocking copy from it is free, as on a GPU)."""
    return not is_emulated(device) or cuda_map.active()


# ---- casting, compiling, attention, adapters -----------------------------------------------------------------------
def layerwise_casting(scenario: Scenario, pipe: Any, modules: list[Any], device: torch.device) -> None:
    storage = getattr(torch, scenario.value("storage_dtype"))
    for module in modules:
        if not callable(getattr(module, "enable_layerwise_casting", None)):
            raise NotApplicable(f"{scenario.name}: {type(module).__name__} has no enable_layerwise_casting")
        module.enable_layerwise_casting(storage_dtype=storage, compute_dtype=_runs_in(module))


def _runs_in(module: Any) -> torch.dtype:
    """The dtype most of a model's weights are in: the `compute_dtype` diffusers' docs pass (the dtype the model was
    loaded in). Not its first parameter's: `_keep_in_fp32_modules` (Wan's modulation table, registered first) stay
    float32 in a bfloat16 model, and the pipeline casts its latents to the compute dtype the model then reports."""
    sizes: dict[torch.dtype, int] = {}
    for param in module.parameters():
        if param.is_floating_point():
            sizes[param.dtype] = sizes.get(param.dtype, 0) + param.numel()
    return max(sizes, key=sizes.__getitem__) if sizes else torch.float32


def regional_compile(scenario: Scenario, pipe: Any, modules: list[Any], device: torch.device) -> None:
    for module in modules:
        if not (
            getattr(module, "_repeated_blocks", None) and callable(getattr(module, "compile_repeated_blocks", None))
        ):
            raise NotApplicable(f"{scenario.name}: {type(module).__name__} names no _repeated_blocks to compile")
        named = set(module._repeated_blocks)
        if not any(type(block).__name__ in named for block in module.modules()):  # compile_repeated_blocks refuses
            raise NotApplicable(f"{scenario.name}: {type(module).__name__} names {sorted(named)} as its repeated "
                                "blocks, and this one has none of them")  # fmt: skip
    # Dynamo counts recompiles per code object, and every pipeline of a family shares its blocks' forward: compiled
    # after other pipelines of the process, a block hit the recompile limit they had used up (fullgraph=True: a hard
    # failure). Compiled afresh, a pipeline's verdict is its own (Stable Diffusion's raised in one census and not in
    # another, by what its worker had compiled before). Only where it applies: nothing is reset for a refusal.
    torch._dynamo.reset()
    for module in modules:
        module.compile_repeated_blocks(fullgraph=scenario.value("fullgraph"), backend=scenario.value("backend"))


def attention_backend(scenario: Scenario, pipe: Any, modules: list[Any], device: torch.device) -> None:
    # plugin cheap, as in `cache`: diffusers only where the scenario applies
    from diffusers.models.attention_dispatch import AttentionBackendName, _check_attention_backend_requirements

    backend = scenario.value("backend")
    try:
        _check_attention_backend_requirements(AttentionBackendName(backend))
    except (RuntimeError, ImportError, ValueError) as exc:  # its package is not installed here
        raise NotApplicable(f"{scenario.name}: {str(exc).splitlines()[0][:200]}") from exc
    for module in modules:
        if not callable(getattr(module, "set_attention_backend", None)):
            raise NotApplicable(f"{scenario.name}: {type(module).__name__} has no set_attention_backend")
        module.set_attention_backend(backend)


def calls_context(scenario: Scenario) -> contextlib.AbstractContextManager[None]:
    """What the calls of a pipeline with `scenario` on run inside. `set_attention_backend` also makes its backend the
    process-wide default, the one every attention without a backend of its own dispatches to: the plugin keeps that
    default unchanged between calls (`kept_process_wide`), so that pipelines checked later in the process do not run
    on it, and restores it for the scenario's own calls with diffusers' `attention_backend` context."""
    if scenario.feature != "attention_backend":
        return contextlib.nullcontext()
    from diffusers.models.attention_dispatch import attention_backend as backend_context  # plugin cheap, as in `cache`

    return backend_context(scenario.value("backend"))


@contextlib.contextmanager
def kept_process_wide() -> Iterator[None]:
    """Turning a scenario on inside it leaves the process-wide attention backend as it found it (see
    `calls_context`)."""
    try:
        # an optional part: older diffusers have no attention dispatch (and plugin cheap, as in `cache`)
        from diffusers.models.attention_dispatch import _AttentionBackendRegistry
    except ImportError:  # a diffusers without attention dispatch has no process-wide backend to keep
        yield
        return
    # put back as found, as diffusers' own `attention_backend` context does on its exit (entering that context would
    # also check, or download, the kernel of whatever backend DIFFUSERS_ATTN_BACKEND made the default)
    found = _AttentionBackendRegistry._active_backend
    try:
        yield
    finally:
        _AttentionBackendRegistry.set_active_backend(found)


LORA_TARGETS = ("to_q", "to_k", "to_v", "to_out.0", "q", "k", "v", "query", "key", "value")


def lora(scenario: Scenario, pipe: Any, modules: list[Any], device: torch.device) -> None:
    try:
        from peft import LoraConfig  # an optional dependency: without peft the scenario does not apply
    except ImportError as exc:
        raise NotApplicable(f"{scenario.name}: peft is not installed here") from exc
    for module in modules:
        if not callable(getattr(module, "add_adapter", None)):
            raise NotApplicable(f"{scenario.name}: {type(module).__name__} takes no PEFT adapter (no add_adapter)")
        names = {name.rsplit(".", 1)[-1] for name, _ in module.named_modules()} | {
            ".".join(name.rsplit(".", 2)[-2:]) for name, _ in module.named_modules()
        }
        targets = [t for t in LORA_TARGETS if t in names]
        if not targets:
            raise NotApplicable(f"{scenario.name}: {type(module).__name__} has none of the projections {LORA_TARGETS}")
        rank = scenario.value("rank")
        module.add_adapter(LoraConfig(r=rank, lora_alpha=rank, target_modules=targets, init_lora_weights=False))
        module.to(device)
