"""A scenario sets a feature as diffusers documents it for the pipeline, and a raise it cannot act on is no `raised`
cell: FasterCache's `is_guidance_distilled` follows a guidance-distilled denoiser (and a tester's own cache config);
a model that declares it takes no group offloading, or has none of the blocks it names as repeated, is not applicable;
a kernel that has no support for the pipeline's inputs makes the scenario not applicable, with the raise as its
reason; a raise in the census's prelude is reported at its own raise site."""

from __future__ import annotations

import json

import pytest
import torch
from diffusers import FluxPipeline

from pytest_nosync import NotApplicable, apply_scenario
from pytest_nosync.census import testers
from pytest_nosync.census.testers import Uncallable
from pytest_nosync.detection.guard_options import GuardOptions
from pytest_nosync.findings import Kind
from pytest_nosync.scenarios import SCENARIOS, parse
from pytest_nosync.suite import pipelines
from pytest_nosync.suite.scenarios import feature_of, guidance_distilled
from tests.twins.loop_pipeline import Denoiser, LoopPipeline, Scheduler

FASTER = "diffusers/hooks/faster_cache.py:470"  # out.chunk(2, dim=0)[1]: a batch of one split in two
CENSUS = ("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider", "--nosync-trace=never")
TESTER = """
from tests.twins.flux_tester import TinyFluxPipelineFastTests  # its transformer embeds the guidance scale
"""


@pytest.mark.parametrize(
    ("setting", "raised"),
    [("faster_cache", False), ("faster_cache:is_guidance_distilled=false", True)],
    ids=["as-documented", "not-distilled"],
)
def test_faster_cache_on_a_guidance_distilled_denoiser_is_set_as_its_docstring_asks(
    pytester: pytest.Pytester, setting: str, raised: bool
) -> None:
    """FasterCacheConfig's docstring asks for is_guidance_distilled=True on a guidance-distilled model: set so, the
    tiny Flux (guidance_embeds) reaches a verdict; set otherwise, FasterCache splits its batch of one in two and
    raises, the cell saying what raised and where."""
    pytester.makepyfile(test_pipelines=TESTER)
    result = pytester.runpytest(*CENSUS, f"--nosync-scenarios={setting}", "--nosync-report=r.json")
    census = json.loads((pytester.path / "r.json").read_text())["census"]
    (outcome,) = census["outcomes"]["test_pipelines.py::TinyFluxPipelineFastTests"].values()
    if not raised:
        assert outcome["verdict"] == "checked", outcome
        return
    assert (outcome["verdict"], outcome["exception"], outcome["where"]) == ("raised", "IndexError", FASTER), outcome
    result.stdout.fnmatch_lines([f"  1 check(s) of 1 class(es) raised IndexError at {FASTER}: tuple index out of*"])


class _Config:  # a pytest-style tester: the config class the census checks ...
    pipeline_class = FluxPipeline

    def get_dummy_components(self) -> dict:
        return {}

    def get_dummy_inputs(self) -> dict:
        return {}


class PipelineChecked(_Config):
    pass


class PipelineFasterCache(_Config):  # ... and the sibling class holding its FasterCache test's config
    FASTER_CACHE_CONFIG = {"spatial_attention_block_skip_range": 2, "is_guidance_distilled": True}


def test_a_testers_own_cache_config_sets_the_parameter_where_the_scenario_leaves_it_to_be_found() -> None:
    tester = testers.Tester(PipelineChecked)
    assert tester.documented(SCENARIOS["faster_cache"]).value("is_guidance_distilled") == "true"
    (user,) = parse("faster_cache:is_guidance_distilled=false")
    assert tester.documented(user).value("is_guidance_distilled") == "false"  # the user's setting wins
    assert tester.documented(SCENARIOS["first_block_cache"]) is SCENARIOS["first_block_cache"]
    # the tester's value joins the user's other settings, which it left to stand (it once replaced them all)
    (skipping,) = parse("faster_cache:spatial_attention_block_skip_range=5")
    found = tester.documented(skipping)
    assert found.value("is_guidance_distilled") == "true"
    assert found.value("spatial_attention_block_skip_range") == 5

    class Alone(_Config):  # a tester of its own (no sibling shares its config): left to the pipeline's configs
        def get_dummy_components(self) -> dict:
            return {}

    assert testers.Tester(Alone).documented(SCENARIOS["faster_cache"]) == SCENARIOS["faster_cache"]


class _Configured:
    def __init__(self, **config: object) -> None:
        self.config = type("Config", (), config)()


@pytest.mark.parametrize(
    ("pipe", "denoiser", "setting", "distilled"),
    [
        (_Configured(), _Configured(guidance_embeds=True), "auto", True),  # Flux dev, HunyuanVideo
        (_Configured(is_distilled=True), _Configured(guidance_embeds=False), "auto", True),  # Flux 2 Klein distilled
        (_Configured(is_distilled=False), _Configured(guidance_embeds=False), "auto", False),
        (_Configured(), _Configured(guidance_embeds=True), "false", False),
    ],
)
def test_guidance_distilled_is_read_from_the_configs_diffusers_documents(
    pipe: object, denoiser: object, setting: str, distilled: bool
) -> None:
    (scenario,) = parse(f"faster_cache:is_guidance_distilled={setting}")
    assert guidance_distilled(scenario, pipe, denoiser) is distilled


class NoGroupOffloadDenoiser(Denoiser):
    _supports_group_offloading = False  # as HunyuanDiT2DModel and DiTTransformer2DModel declare


class RepeatedDenoiser(Denoiser):
    _repeated_blocks = ["Linear"]


class MissingRepeatedDenoiser(Denoiser):
    _repeated_blocks = ["BasicTransformerBlock"]  # as UNet2DConditionModel names them, which IF's UNet has none of


def _loop(denoiser: Denoiser) -> LoopPipeline:
    return LoopPipeline(transformer=denoiser, scheduler=Scheduler())


def test_a_model_that_declares_no_group_offloading_is_not_applicable_and_one_that_takes_it_applies() -> None:
    with pytest.raises(NotApplicable, match=r"does not support group offloading \(_supports_group_offloading = False"):
        apply_scenario(_loop(NoGroupOffloadDenoiser()), "group_offload_block", device="cpu")
    pipe = _loop(Denoiser())
    apply_scenario(pipe, "group_offload_block", device="cpu")
    assert getattr(pipe.transformer, "_diffusers_hook", None) is not None  # diffusers' group offloading hooks on


def test_regional_compile_of_a_model_without_the_blocks_it_names_is_not_applicable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scenario = SCENARIOS["regional_compile"]
    device = torch.device("cpu")
    with pytest.raises(NotApplicable, match=r"names \['BasicTransformerBlock'\] as its repeated blocks"):
        feature_of(scenario)(scenario, None, [MissingRepeatedDenoiser()], device)
    compiled: list[str] = []  # the clean twin reaches diffusers' compile_repeated_blocks (what it compiles: not here)
    monkeypatch.setattr(torch.nn.Module, "compile", lambda self, *a, **k: compiled.append(type(self).__name__))
    earlier = torch.compile(lambda x: x * 2, backend="eager", fullgraph=True)  # another pipeline's compiled code
    earlier(torch.ones(2))
    code = earlier._torchdynamo_orig_callable.__code__
    assert torch._dynamo.eval_frame._debug_get_cache_entry_list(code)
    feature_of(scenario)(scenario, None, [RepeatedDenoiser()], device)
    assert compiled == ["Linear"]
    # compiled afresh: no recompiles another pipeline spent count against this one's limit
    assert not torch._dynamo.eval_frame._debug_get_cache_entry_list(code)


class _NoKernel(Denoiser):
    """A denoiser whose attention kernel refuses its inputs, as torch's SDPA limited to cuDNN does in float32."""

    calls = 0

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message

    def forward(self, latents: torch.Tensor) -> torch.Tensor:
        type(self).calls += 1
        raise RuntimeError(self.message)


def _check(prepared: pipelines.Prepared) -> object:
    kwargs = lambda pipe: lambda steps: {"latents": torch.randn(2, 8), "num_inference_steps": steps}  # noqa: E731
    return pipelines.check(prepared, "syncs", kwargs, GuardOptions(checks=("syncs",), backend="emulate"))


def test_a_kernel_without_support_for_the_inputs_makes_the_scenario_not_applicable_and_another_raise_does_not() -> None:
    scenario = SCENARIOS["attention_backend_native"]
    prepared = pipelines.Prepared(scenario, _loop(_NoKernel("No available kernel. Aborting execution.")))
    with pytest.raises(NotApplicable, match="has no support for this pipeline's inputs here: RuntimeError: No avail"):
        _check(prepared)
    calls = _NoKernel.calls
    with pytest.raises(NotApplicable):  # its other checks say so without calling the pipeline again
        _check(prepared)
    assert _NoKernel.calls == calls and prepared.pipe is None

    broken = pipelines.Prepared(scenario, _loop(_NoKernel("The size of tensor a (16) must match the size of b (8)")))
    report = _check(broken)  # the bug twin: any other raise is the pipeline's, a `raised` cell
    (error,) = report.of_kind(Kind.ERROR)
    assert error.data["message"].startswith("The size of tensor a") and error.where.line > 0


def test_a_raise_in_the_prelude_is_reported_at_its_own_raise_site() -> None:
    """The census's prelude (LEdits++'s `invert`) wraps a raise in Uncallable: its scenario's checks report the
    pipeline's exception at the pipeline's line, not the wrapper at `<unknown>:0`."""

    def prelude(pipe: object) -> None:
        try:
            raise RuntimeError("Expected all tensors to be on the same device")
        except RuntimeError as exc:
            raise Uncallable(exc) from exc

    prepared = pipelines.prepare(lambda: _loop(Denoiser()), SCENARIOS["plain"], "transformer", torch.device("cpu"),
                                 then=prelude)  # fmt: skip
    assert type(prepared.error) is RuntimeError and prepared.error.__traceback__.tb_frame.f_code.co_name == "prelude"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bfloat16", "float32"])
def test_layerwise_casting_computes_in_the_dtype_the_model_was_loaded_in(dtype: torch.dtype) -> None:
    """A Wan transformer loaded in bfloat16 keeps its `_keep_in_fp32_modules` in float32, and its first parameter is
    one of them: the scenario computes in bfloat16 as diffusers' docs do, so the pipeline's latents, cast to the dtype
    the model reports, meet its bfloat16 patch embedding (computing in float32 raised `Input type (float) and bias type
    (c10::BFloat16)` at transformer_wan.py's patch embedding in every Wan cell of the bfloat16 census)."""
    from diffusers import WanTransformer3DModel

    from pytest_nosync.suite.targets.registry import _cast_like_from_pretrained

    model = WanTransformer3DModel(
        patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=12, in_channels=4, out_channels=4,
        text_dim=16, freq_dim=32, ffn_dim=16, num_layers=1, rope_max_seq_len=32,
    )  # fmt: skip
    _cast_like_from_pretrained(model, dtype)
    assert next(model.parameters()).dtype == torch.float32  # the kept table comes first
    (casting,) = parse("layerwise_casting")
    feature_of(casting)(casting, None, [model], torch.device("cpu"))
    assert model.dtype == dtype
    latents = torch.randn(1, 4, 1, 4, 4).to(model.dtype)  # what Wan's pipeline does with its float32 latents
    out = model(latents, timestep=torch.tensor([500]), encoder_hidden_states=torch.randn(1, 3, 16).to(model.dtype))
    assert out.sample.shape == latents.shape
