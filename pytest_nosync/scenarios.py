"""The scenarios: a pipeline with one of the features its users turn on — a cache hook, offloading, layerwise casting,
compiled blocks, an attention backend, a LoRA adapter — each a named change to a built pipeline, checked as the plain
pipeline is (`plain`: as its builder made it). Checks × scenarios × pipelines is the matrix.

A scenario's facts live here, plain data the option table reads without importing diffusers: its name, what it turns
on, the function of pytest_nosync.suite.scenarios that turns it on (`feature`) and, for a cache hook, the one that
builds its diffusers config (`config`) — both by name, as a check names its detector module: that module imports
torch and diffusers, which the plugin must not import while it is off — and its parameters with their ranges,
which a user may set (`--nosync-scenarios=first_block_cache:threshold=0.3`). Parameters are what diffusers' docs use,
made small enough that every step of a two- or three-step tiny call exercises the feature (a cache that skips from
the second step, a group of one block). Whether a scenario applies to a pipeline (a hook that supports its blocks, a
backend installed here) is decided where it is applied; one that does not is counted with its reason.

Adding a scenario: one entry here and, for a new kind of feature or a new cache config, the one function of
suite/scenarios.py its entry names; its twins: a pipeline whose steps it keeps clean, one where it syncs per step, one
it does not apply to.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

PLAIN = "plain"
AUTO = "auto"  # a parameter set as diffusers documents it for the pipeline (suite.scenarios says how)


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")  # a bool parameter's words


@dataclass(frozen=True)
class Param:
    """A parameter's default and its allowed range (numbers), or allowed values (choices), or the reader of the library
    that takes it (`reads`: raises ValueError for a value it refuses)."""

    default: Any
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] = ()
    reads: Callable[[str], Any] | None = None

    def read(self, raw: str, name: str) -> Any:
        kind = type(self.default)
        if kind is bool:  # a word that is neither is a mistake, not False (`fullgraph=on` once read as False)
            if raw.lower() not in _TRUE + _FALSE:
                raise ValueError(f"{name} must be true or false, got {raw!r}")
            return raw.lower() in _TRUE
        try:
            value = kind(raw)
        except ValueError:
            raise ValueError(f"{name} must be a {kind.__name__}, got {raw!r}") from None
        if kind is float and math.isnan(value):  # NaN passes every range comparison
            raise ValueError(f"{name} must be a number, got {raw!r}")
        if kind is str:  # a choice as written in any case: `True` is `true`
            value = next((c for c in self.choices if str(c).lower() == value.lower()), value)
        if self.choices and value not in self.choices:
            raise ValueError(f"{name} must be one of {', '.join(map(str, self.choices))}, got {raw!r}")
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            raise ValueError(f"{name} must be in [{self.low}, {self.high}], got {raw!r}")
        if self.reads is not None:
            try:
                self.reads(value)
            except ValueError as exc:  # the library's own refusal, where the user typed it, not at the feature's call
                raise ValueError(f"{name} {exc}, got {raw!r}") from None
        return value


@dataclass(frozen=True)
class Scenario:
    """One feature turned on, with its parameters. `cuda_only`: why it cannot run on another device (CUDA kernels,
    dynamo): not applicable there, for that reason (docs/emulation.md lists them)."""

    name: str
    help: str
    feature: str  # the function of suite.scenarios that turns it on, by name (resolved there: see the docstring)
    params: Mapping[str, Param] = field(default_factory=dict)
    values: Mapping[str, Any] = field(default_factory=dict)  # the user's settings over the defaults
    cuda_only: str = ""  # why it cannot run under the emulation ("" when it can)
    not_on_cpu: str = ""  # why it cannot run with the CPU itself as the device ("" when it can)
    # what a raise in a call says where the feature has no support for the pipeline's inputs (a kernel without that
    # dtype or shape, a model that names the one backend it takes): regular expressions over `Type: message`; such
    # a raise makes the scenario not applicable to that pipeline, with the raise as its reason
    unsupported: tuple[str, ...] = ()
    config: str = ""  # a cache hook's: the function of suite.scenarios that builds its diffusers config, by name

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        object.__setattr__(self, "values", MappingProxyType(dict(self.values)))

    def value(self, name: str) -> Any:
        return self.values[name] if name in self.values else self.params[name].default

    def settings(self) -> dict[str, Any]:
        return {name: self.value(name) for name in self.params}

    def with_values(self, values: Mapping[str, str]) -> Scenario:
        """The scenario with `values` (raw strings, read by each parameter's spec) set over those it has."""
        read = dict(self.values)
        for key, raw in values.items():
            if key not in self.params:
                known = ", ".join(self.params) or "none"
                raise ValueError(f"scenario {self.name} has no parameter {key!r} (its parameters: {known})")
            read[key] = self.params[key].read(raw, f"{self.name}:{key}")
        return replace(self, values=read)


def _memory_size(raw: str) -> int:
    """A memory size as ComponentsManager reads it (accelerate's convert_file_size_to_int: "3GB", "512MiB"); a
    ValueError where it would raise when the offloading is turned on, on the device, as an `error` finding."""
    # without accelerate diffusers cannot offload, and the scenario says so where it is turned on
    try:
        from accelerate.utils.modeling import convert_file_size_to_int  # imports torch: only for a size a user writes
    except ImportError:
        return 0
    try:
        return convert_file_size_to_int(raw)
    except ValueError:
        raise ValueError("must be a size with its unit, as diffusers reads it (3GB, 512MiB)") from None


def _scenario(name: str, help: str, feature: str, **params: Any) -> tuple[str, Scenario]:
    facts = {fact: params.pop(fact) for fact in ("cuda_only", "not_on_cpu", "unsupported", "config") if fact in params}
    specs = {k: v if isinstance(v, Param) else Param(v) for k, v in params.items()}
    return name, Scenario(name, help, feature, specs, **facts)


# sequential offloading (accelerate raises) and group offloading on a stream (diffusers raises) on the CPU itself: under
# the emulation the graph checks run there, and a raise would read as an upstream bug
TO_AN_ACCELERATOR = (
    "it moves weights between the host and an accelerator, and the CPU is the device here (the emulation's graph "
    "checks run there)"
)

# ComponentsManager's offloading decides what to move aside from the device's free memory: diffusers asks for it when
# it is turned on, and neither the CPU nor the emulated device answers
FREE_MEMORY = (
    "ComponentsManager's auto offloading asks the device for its free memory, which only an accelerator answers"
)

NO_DYNAMO = (
    "dynamo cannot trace the emulated device's tensors, nor compile under the emulation's CUDA mapping on the CPU"
)

# A fused attention kernel takes some dtypes, head sizes and masks and not others: torch's scaled_dot_product_attention
# limited to it says "No available kernel" (cuDNN's fused attention is a half-precision kernel: in float32 it has none).
# A model whose attention one backend alone can compute names it (AnyFlow FAR's causal generation: Flex's BlockMask).
NO_KERNEL = (r"^RuntimeError: No available kernel", r"requires the '\w+' attention backend")

# attention backends diffusers dispatches to: (scenario suffix, diffusers' backend name, why it needs CUDA)
ATTENTION_BACKENDS = (
    ("native", "native", ""),
    ("cudnn", "_native_cudnn", "cuDNN's attention kernel runs on CUDA only"),
    ("efficient", "_native_efficient", "the memory-efficient attention kernel runs on CUDA only"),
    ("flash", "flash", "flash-attn runs on CUDA only"),
    ("sage", "sage", "SageAttention runs on CUDA only"),
    ("xformers", "xformers", "xformers' kernels run on CUDA only"),
    ("flex", "flex", "torch's FlexAttention takes CUDA, CPU, HPU or MPS tensors, not the emulated device's"),
)

SCENARIOS: dict[str, Scenario] = dict(
    (
        _scenario(PLAIN, "the pipeline as its builder made it", "plain"),
        _scenario("first_block_cache", "FirstBlockCacheConfig: skip the other blocks while the first one's residual "
                  "changes little", "cache", config="first_block_cache_config", threshold=Param(0.2, 0.0, 10.0)),
        _scenario("pyramid_attention_broadcast", "PyramidAttentionBroadcastConfig: reuse spatial attention every other "
                  "block over the whole schedule", "cache", config="pyramid_attention_broadcast_config",
                  spatial_attention_block_skip_range=Param(2, 1, 100)),
        _scenario("faster_cache", "FasterCacheConfig: reuse attention and the unconditional branch over the whole "
                  "schedule", "cache", config="faster_cache_config",
                  spatial_attention_block_skip_range=Param(2, 1, 100),
                  unconditional_batch_skip_range=Param(2, 1, 100),
                  is_guidance_distilled=Param(AUTO, choices=(AUTO, "true", "false"))),
        _scenario("taylorseer_cache", "TaylorSeerCacheConfig: forecast the blocks' outputs every other step",
                  "cache", config="taylorseer_cache_config", cache_interval=Param(2, 1, 100), max_order=Param(1, 0, 4),
                  disable_cache_before_step=Param(1, 0, 100)),
        _scenario("mag_cache", "MagCacheConfig with Flux's magnitude ratios, interpolated to the call's steps",
                  "cache", config="mag_cache_config", threshold=Param(0.5, 0.0, 10.0), max_skip_steps=Param(1, 1, 100),
                  retention_ratio=Param(0.0, 0.0, 1.0)),
        _scenario("text_kv_cache", "TextKVCacheConfig: each block's text keys and values computed once, reused "
                  "every step (lossless)", "cache", config="text_kv_cache_config"),
        _scenario("sea_cache", "SeaCacheConfig: the block stack's residual reused while the spectral indicator "
                  "changes little", "adapted_cache", config="sea_cache_config", threshold=Param(0.25, 0.0, 10.0),
                  residual_order=Param(1, 0, 1), retention_steps=Param(1, 0, 100), cache_end_steps=Param(0, 0, 100),
                  max_consecutive_cached=Param(2, 0, 100), power_exp=Param(3.0, 0.1, 10.0)),
        _scenario("model_cpu_offload", "enable_model_cpu_offload(): each model on the device while it runs", "offload"),
        _scenario("sequential_cpu_offload", "enable_sequential_cpu_offload(): each submodule's weights on the device "
                  "while it runs", "offload", not_on_cpu=TO_AN_ACCELERATOR),
        _scenario("components_auto_offload", "ComponentsManager.enable_auto_cpu_offload(): a modular pipeline's "
                  "models moved to the device as they run, others moved aside when its memory runs short",
                  "components_auto_offload", cuda_only=FREE_MEMORY,
                  memory_reserve_margin=Param("3GB", reads=_memory_size)),
        _scenario("group_offload_block", "enable_group_offload(offload_type='block_level'): groups of blocks onloaded "
                  "in turn", "group_offload", num_blocks_per_group=Param(1, 1, 1000)),
        _scenario("group_offload_leaf_stream", "enable_group_offload(offload_type='leaf_level', use_stream=True): "
                  "leaves prefetched on a CUDA stream", "group_offload", not_on_cpu=TO_AN_ACCELERATOR),
        _scenario("layerwise_casting", "enable_layerwise_casting(storage_dtype=float8_e4m3fn): weights stored in fp8, "
                  "cast to the compute dtype per layer", "layerwise_casting",
                  storage_dtype=Param("float8_e4m3fn", choices=("float8_e4m3fn", "float8_e5m2"))),
        _scenario("regional_compile", "compile_repeated_blocks(): each repeated block compiled (dynamo, eager "
                  "backend unless set)", "regional_compile", cuda_only=NO_DYNAMO,
                  backend=Param("eager", choices=("eager", "aot_eager", "inductor")),
                  fullgraph=Param(True)),
        _scenario("lora", "a PEFT LoRA adapter on the denoiser's attention projections", "lora",
                  rank=Param(4, 1, 256)),
        *(
            _scenario(f"attention_backend_{suffix}", f"set_attention_backend({backend!r}) on the denoiser",
                      "attention_backend", backend=Param(backend, choices=(backend,)), cuda_only=cuda_only,
                      unsupported=NO_KERNEL)
            for suffix, backend, cuda_only in ATTENTION_BACKENDS
        ),
    )
)  # fmt: skip


class UnknownScenario(ValueError):
    """A scenario name nobody registered, or a bad parameter; the message says which and what is known."""


def parse(text: str | Iterable[str]) -> tuple[Scenario, ...]:
    """The scenarios of `NAME[:key=value...][,NAME...]` or `all` (every registered one, plain first), in order, each
    named once; UnknownScenario with one sentence for an unknown name, a name given twice or a parameter out of
    range."""
    given = text.split(",") if isinstance(text, str) else list(text)
    wrong = next((t for t in given if not isinstance(t, str)), None)
    if wrong is not None:  # a marker's list: `scenarios=["lora", 3]`
        raise UnknownScenario(f"a scenario is named by a string, got {wrong!r}")
    items = [t.strip() for t in given if t.strip()]
    if not items:
        raise UnknownScenario("needs at least one scenario name, or all")
    if items == ["all"]:
        return tuple(SCENARIOS.values())
    if "all" in items:
        raise UnknownScenario("all is every scenario: name it alone, or name scenarios without it")
    chosen: dict[str, Scenario] = {}
    for item in items:
        name, *settings = item.split(":")
        if name not in SCENARIOS:
            raise UnknownScenario(f"unknown scenario {name!r}; known: all, {', '.join(SCENARIOS)}")
        if name in chosen:  # the ids name a scenario, not its settings: a second one would replace the first
            raise UnknownScenario(
                f"scenario {name} is named twice: name it once, with all its parameters ({name}:a=1:b=2)"
            )
        values = {}
        for setting in settings:
            key, sep, raw = setting.partition("=")
            if not sep:
                raise UnknownScenario(f"{item}: a parameter is key=value, got {setting!r}")
            values[key.strip()] = raw.strip()
        try:
            chosen[name] = SCENARIOS[name].with_values(values)
        except ValueError as exc:
            raise UnknownScenario(str(exc)) from None
    return tuple(chosen.values())
