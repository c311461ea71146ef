"""Modular Diffusers tester configs under the gate (census.modular), on configs written here around a real modular
pipeline (tests/twins/modular_loop.py): one target per config, its loop block's steps checked, a planted sync found
at its line, and what cannot be checked (no stand-in, blocks that cannot be built) counted, never passed."""

from __future__ import annotations

import json

import pytest

from pytest_nosync.census.hub_standins import modular_repos
from tests.twins import modular_loop

CONFIGS = """
import torch
from diffusers.modular_pipelines import ModularPipeline

from tests.twins.modular_loop import LoopBlocks

READ = {read}


class LoopModularTesterConfig:  # diffusers' BaseModularPipelineTesterConfig style
    pipeline_class = ModularPipeline
    pipeline_blocks_class = LoopBlocks
    pretrained_model_name_or_path = "{repo}"

    def get_generator(self, seed=0):
        return torch.Generator("cpu").manual_seed(seed)

    def get_dummy_inputs(self, seed=0):
        generator = self.get_generator(seed)
        return {{"latents": torch.randn(2, 8, generator=generator), "num_inference_steps": 2, "read_early": READ}}

    def get_pipeline(self, components_manager=None, dtype=torch.float32):  # diffusers' tester mixin's, the repo's
        pipeline = self.pipeline_blocks_class().init_pipeline(
            self.pretrained_model_name_or_path, components_manager=components_manager
        )
        pipeline.load_components(dtype=dtype)
        return pipeline


class TestLoopModularPipelineFast(LoopModularTesterConfig):
    def test_own(self):
        pass


class TestLoopModularPipelineAgain(LoopModularTesterConfig):  # the same config: its checks are the first class's
    def test_own_too(self):
        pass
"""

BROKEN = """
import torch
from diffusers.modular_pipelines import ModularPipeline, SequentialPipelineBlocks


class Unbuildable(SequentialPipelineBlocks):
    def __init__(self):
        raise TypeError("these blocks need a block that is not there")


class TestUnbuildableModular:
    pipeline_class = ModularPipeline
    pipeline_blocks_class = Unbuildable
    pretrained_model_name_or_path = "{repo}"

    def get_dummy_inputs(self, seed=0):
        return {{}}


class TestRaisingModular:
    pipeline_class = ModularPipeline
    pipeline_blocks_class = __import__("tests.twins.modular_loop").twins.modular_loop.LoopBlocks
    pretrained_model_name_or_path = "{repo}"

    def get_dummy_inputs(self, seed=0):
        return {{"latents": torch.randn(2, 8), "num_inference_steps": 2, "fail": True}}
"""

REPO = "nosync-twins/tiny-loop-modular"


@pytest.fixture(autouse=True)
def _standin(monkeypatch: pytest.MonkeyPatch) -> None:
    """The twins' repository has a stand-in, as the modular Flux repository has one; any other has none."""
    monkeypatch.setitem(modular_repos.MODULAR_STANDINS, REPO, modular_loop.tiny_components)


@pytest.fixture(autouse=True, scope="module")
def _dynamo_loaded() -> None:
    """Traced once here first, so that pytester's unloading of what a run imported does not re-register dynamo's
    modules with torch (see tests/census/test_tester_classes.py)."""
    import torch

    torch._dynamo.explain(lambda x: x + 1)(torch.ones(2))
    torch._dynamo.reset()


def test_a_modular_config_gets_one_check_per_suite_check_once(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_modular_pipeline_loop=CONFIGS.format(read=False, repo=REPO))
    result = pytester.runpytest("--nosync", "--collect-only", "-q", "-p", "no:cacheprovider")
    checks = [line for line in result.outlines if "nosync[" in line]
    assert checks == [
        f"test_modular_pipeline_loop.py::TestLoopModularPipelineFast::nosync[{check}]"
        for check in ("syncs", "graph_breaks", "alloc_growth", "host_overhead")
    ]


def test_a_modular_config_with_a_classic_testers_methods_too_is_built_from_its_blocks(
    pytester: pytest.Pytester,
) -> None:
    """A config that also gives `get_dummy_components` is still driven as a modular config (census.modular): its
    pipeline comes from its blocks and its repository, never from the classic method."""
    configs = CONFIGS.format(read=False, repo=REPO).replace(
        "    def get_dummy_inputs(self, seed=0):",
        "    def get_dummy_components(self):\n        raise RuntimeError('built the classic way')\n\n"
        "    def get_dummy_inputs(self, seed=0):",
    )
    pytester.makepyfile(test_modular_pipeline_loop=configs)
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "built the classic way" not in result.stdout.str()


def test_a_clean_modular_loop_passes_every_check_over_its_loop_blocks_steps(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_modular_pipeline_loop=CONFIGS.format(read=False, repo=REPO))
    result = pytester.runpytest("-m", "gpu", "--nosync", "-p", "no:cacheprovider", "--nosync-report=report.json")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["nosync: 4 of 4 checks reached a verdict; 1 of 1 pipeline classes fully checked"])
    doc = json.loads((pytester.path / "report.json").read_text())
    steps = {t["check"]: t["steps"] for t in doc["tests"]}
    # more steps than the test's own 2 where a check needs them: the blocks take num_inference_steps
    assert steps["syncs"] == 2 and steps["alloc_growth"] >= 3, steps
    assert {t["metrics"]["denoiser"] for t in doc["tests"]} == {"transformer"}


def test_a_per_step_input_of_the_blocks_follows_the_steps_of_every_call(pytester: pytest.Pytester) -> None:
    """Blocks taking a schedule of one entry a step (Ideogram 4's guidance schedule), which they refuse at another
    length than the call's steps: its default resampled to the test's 2 steps, to the calibrating call's 3 and to the
    growth check's more; before, the test's own call raised with the 3-entry default."""
    configs = CONFIGS.format(read=False, repo=REPO).replace(
        "import LoopBlocks", "import ScheduledLoopBlocks as LoopBlocks"
    )
    pytester.makepyfile(test_modular_pipeline_loop=configs)
    args = ("-m", "gpu", "--nosync", "-k", "syncs or alloc_growth", "-p", "no:cacheprovider")
    result = pytester.runpytest(*args, "--nosync-report=report.json")
    result.assert_outcomes(passed=2)
    doc = json.loads((pytester.path / "report.json").read_text())
    steps = {t["check"]: t["steps"] for t in doc["tests"]}
    assert steps["syncs"] == 2 and steps["alloc_growth"] >= 3, steps  # more than 2: the steps follow the count


def test_the_resampled_schedule_keeps_its_first_and_last_entries() -> None:
    from pytest_nosync.census.modular import resampled

    schedule = (7.0,) * 45 + (3.0,) * 3  # Ideogram 4's default guidance schedule
    assert resampled(schedule, 2) == [7.0, 3.0] and resampled(schedule, 3) == [7.0, 7.0, 3.0]
    assert resampled(schedule, 1) == [7.0] and resampled(schedule, 48) == list(schedule)


@pytest.mark.parametrize("backend", ["auto", "emulate"])  # auto: a GPU's where there is one
def test_a_sync_in_a_modular_loop_step_fails_the_syncs_check_at_its_line(
    pytester: pytest.Pytester, backend: str
) -> None:
    pytester.makepyfile(test_modular_pipeline_loop=CONFIGS.format(read=True, repo=REPO))
    args = ("-m", "gpu", "--nosync", f"--nosync-backend={backend}", "-k", "syncs", "-p", "no:cacheprovider")
    result = pytester.runpytest(*args)
    result.assert_outcomes(failed=1)
    line = modular_loop.line_of("read before the denoiser")
    result.stdout.fnmatch_lines([f"*dtoh_sync*modular_loop.py:{line}*step 0 ×1, step 1 ×1*"])
    assert "FAILED test_modular_pipeline_loop.py::TestLoopModularPipelineFast::nosync[syncs]" in result.stdout.str()


def test_a_modular_loop_passing_its_denoiser_the_fields_its_signature_names_gets_a_graph_verdict(
    pytester: pytest.Pytester,
) -> None:
    """The graph check's compiled forward keeps the denoiser's signature: a block that passes only the fields
    `inspect.signature(transformer.forward)` names (QwenImage's, LTX2's, Cosmos3's, Wan Animate 2's) passed none to a
    forward of `*args, **kwargs`, and the cell raised (`missing 1 required positional argument: 'latents'`)."""
    configs = CONFIGS.format(read=False, repo=REPO).replace(
        '"read_early": READ}', '"read_early": READ, "by_signature": True}'
    )
    assert "by_signature" in configs
    pytester.makepyfile(test_modular_pipeline_loop=configs)
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "graph_breaks", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["nosync: 1 of 1 checks reached a verdict*"])


def test_no_stand_in_unbuildable_blocks_are_counted_and_a_raise_in_the_loop_is_an_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_modular_pipeline_nostandin=CONFIGS.format(read=False, repo="nosync-twins/no-such-modular-repo"),
        test_modular_pipeline_broken=BROKEN.format(repo=REPO),
    )
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=2, failed=1)
    out = result.stdout.str()
    assert "0 of 3 checks reached a verdict; 0 of 3 pipeline classes fully checked; 1 raised, 2 not checkable" in out
    assert "the hub repository nosync-twins/no-such-modular-repo has no stand-in" in out
    assert "Unbuildable() raised TypeError: these blocks need a block that is not there" in out
    line = modular_loop.line_of("raises in the modular loop")
    result.stdout.fnmatch_lines([f"*error*modular_loop.py:{line}*step 0*", "*ValueError: the modular loop fails*"])


def test_a_tester_naming_its_get_pipeline_dtype_torch_dtype_is_built_and_checked(pytester: pytest.Pytester) -> None:
    # as diffusers' Cosmos3 distilled config names it; a keyword dtype raised TypeError in its get_pipeline
    configs = CONFIGS.format(read=False, repo=REPO).replace("dtype=torch.float32)", "torch_dtype=torch.float32)")
    configs = configs.replace("load_components(dtype=dtype)", "load_components(dtype=torch_dtype)")
    assert "torch_dtype=torch.float32" in configs
    pytester.makepyfile(test_modular_pipeline_loop=configs)
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "syncs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_a_repository_no_stand_in_fits_is_not_stood_in_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    """No repository is a misfit now (MiniMax H3's was, until its stand-in was built in code): a planted one."""
    repo = "nosync-twins/misfit-modular-repo"
    monkeypatch.setitem(modular_repos.MODULAR_STANDINS, repo, lambda: {"x": 1})
    monkeypatch.setitem(modular_repos.MISFITS, repo, "its blocks' processor needs torchvision")
    with pytest.raises(modular_repos.NoStandIn, match="processor needs torchvision"):
        modular_repos.components_for(repo)()


TORCHVISION_STANDINS = [
    ("hf-internal-testing/tiny-flux2-modular", "flux2.test_pipeline_flux2", "Flux2PipelineTesterConfig", "Pixtral"),
    ("hf-internal-testing/tiny-qwenimage-edit-modular", "qwenimage.test_qwenimage_edit",
     "QwenImageEditPipelineTesterConfig", "Qwen2VL"),
    ("hf-internal-testing/tiny-qwenimage-edit-plus-modular", "qwenimage.test_qwenimage_edit_plus",
     "QwenImageEditPlusPipelineTesterConfig", "Qwen2VL"),
]  # fmt: skip


@pytest.mark.parametrize(("repo", "module", "tester", "processor"), TORCHVISION_STANDINS)
def test_a_repository_whose_processor_needs_torchvision_is_not_stood_in_without_it_with_that_reason(
    monkeypatch: pytest.MonkeyPatch, repo: str, module: str, tester: str, processor: str
) -> None:
    monkeypatch.setattr(modular_repos, "torchvision_importable", lambda: False)
    reason = f"its stand-in's {processor}Processor .* only with torchvision, which is not installed here"
    with pytest.raises(modular_repos.NoStandIn, match=reason):
        modular_repos.components_for(repo)


@pytest.mark.parametrize(("repo", "module", "tester", "processor"), TORCHVISION_STANDINS)
def test_a_repository_whose_processor_needs_torchvision_is_its_classic_testers_components_with_it(
    monkeypatch: pytest.MonkeyPatch, repo: str, module: str, tester: str, processor: str
) -> None:
    """Where torchvision is importable, the stand-in is the family's classic tester's components (their processor
    from its hub stand-in). This machine has no torchvision: the plan is asserted here; the real build and check run
    on the GPU machine, which has it (docs/census.md, "Modular Diffusers")."""
    monkeypatch.setattr(modular_repos, "torchvision_importable", lambda: True)
    built = []
    monkeypatch.setattr(modular_repos, "_classic_components", lambda *source: built.append(source) or {"x": 1})
    assert modular_repos.components_for(repo)() == {"x": 1}
    assert built == [(f"tests.pipelines.{module}", tester)]


def test_torchvision_is_looked_for_as_this_environment_has_it() -> None:
    import importlib.util

    assert modular_repos.torchvision_importable() is (importlib.util.find_spec("torchvision") is not None)


@pytest.mark.parametrize(
    ("repo", "blocks", "absent"),
    [
        ("hf-internal-testing/tiny-anima-modular-pipe", "AnimaAutoBlocks", set()),
        ("akshan-main/tiny-ernie-image-modular-pipe", "ErnieImageAutoBlocks", {"pe", "pe_tokenizer"}),
        ("hf-internal-testing/tiny-wan-animate-2-modular", "WanAnimate2Blocks", set()),
        ("hf-internal-testing/tiny-wan-animate-2-distilled-modular", "WanAnimate2DistilledBlocks", set()),
        ("hf-internal-testing/tiny-minimax-music3-modular-pipe", "MiniMaxMusic3Blocks", set()),
        ("hf-internal-testing/tiny-minimax-h3-modular-pipe", "MiniMaxH3Blocks", set()),
    ],
)
def test_a_repository_built_in_code_gives_its_blocks_every_component_they_load(
    repo: str, blocks: str, absent: set[str]
) -> None:
    """The stand-ins built in code (hub_standins.modular_builds) name every component their blocks load from a
    repository, but the optional ones the testers never run (`absent`), and the blocks' pipeline takes them."""
    from diffusers import modular_pipelines

    pipeline = getattr(modular_pipelines, blocks)().init_pipeline(None)
    specs = pipeline._blocks.expected_components
    loaded = {spec.name for spec in specs if spec.default_creation_method == "from_pretrained"}
    components = modular_repos.components_for(repo)()
    assert set(components) == loaded - absent
    pipeline.update_components(**components)


REPO_MINIMAX_H3 = "hf-internal-testing/tiny-minimax-h3-modular-pipe"


@pytest.mark.skipif(modular_repos.torchvision_importable(), reason="transformers builds the processor with torchvision")
def test_transformers_builds_no_qwen3_vl_processor_without_torchvision_whatever_its_video_processor() -> None:
    """Why MiniMax H3's stand-in has a processor of its own: Qwen3VLProcessor checks its video processor's class (None
    too) against one transformers exports only with torchvision."""
    from transformers import Qwen3VLProcessor

    from pytest_nosync.census.hub_standins import text_repos

    processor = modular_repos.components_for(REPO_MINIMAX_H3)()["processor"]
    with pytest.raises((AttributeError, TypeError, ValueError)):  # transformers 5.24: AttributeError
        Qwen3VLProcessor(processor.image_processor, text_repos.qwen2_tokenizer(), None)


@pytest.mark.parametrize("workflow", ["t2va", "fl2va", "ref2va"])
def test_the_minimax_h3_stand_ins_processor_serves_its_blocks_text_encoder_steps_without_a_video_processor(
    workflow: str,
) -> None:
    """Bug twin: MiniMax H3 had no stand-in (its Qwen3VLProcessor needs torchvision). The stand-in's, a Qwen3VLProcessor
    without a video processor, gives each workflow's text encoder step the prompt's token types and its image's vision
    block (a keyframe, an image reference): rows tagged text (1) and, with an image, video (0)."""
    from diffusers.modular_pipelines import MiniMaxH3Blocks
    from diffusers.modular_pipelines.minimax_h3 import MiniMaxH3ImageReference
    from PIL import Image
    from transformers import Qwen3VLProcessor

    components = modular_repos.components_for(REPO_MINIMAX_H3)()
    assert isinstance(components["processor"], Qwen3VLProcessor)
    assert not hasattr(components["processor"], "video_processor")
    image = Image.new("RGB", (64, 64))
    given = {
        "t2va": {},
        "fl2va": {"keyframes": [image]},
        "ref2va": {"normalized_references": [MiniMaxH3ImageReference(image=image)]},
    }
    step = MiniMaxH3Blocks().get_workflow(workflow).sub_blocks["text_encoder"]
    pipe = step.init_pipeline(None)
    pipe.update_components(**{name: components[name] for name in ("text_encoder", "tokenizer", "processor")})
    out = pipe(prompt="a robot dancing", **given[workflow], output=["prompt_embeds", "text_token_tags"])
    assert out["prompt_embeds"].shape[:2] == (1, out["text_token_tags"].shape[0])
    assert set(out["text_token_tags"].tolist()) == ({1} if workflow == "t2va" else {0, 1})


def _krea2_classic_components() -> dict:
    """Components as Krea 2's classic tester gives them: a text encoder of 2 layers, a transformer taking 3 (its
    pipeline selects layers 0..2)."""
    import torch
    from diffusers import AutoencoderKLQwenImage, FlowMatchEulerDiscreteScheduler, Krea2Transformer2DModel
    from transformers import Qwen3VLConfig, Qwen3VLModel

    from pytest_nosync.census.hub_standins import text_repos

    torch.manual_seed(0)
    heads = {"num_attention_heads": 2, "num_key_value_heads": 2}
    text = {"hidden_size": 16, "intermediate_size": 16, "num_hidden_layers": 2, "head_dim": 8, **heads}
    vision = {"depth": 1, "hidden_size": 16, "intermediate_size": 16, "num_heads": 2, "out_hidden_size": 16}
    return {
        "transformer": Krea2Transformer2DModel(
            in_channels=16,
            num_layers=1,
            attention_head_dim=8,
            num_attention_heads=4,
            num_key_value_heads=2,
            intermediate_size=32,
            timestep_embed_dim=8,
            text_hidden_dim=16,
            num_text_layers=3,
            text_num_attention_heads=2,
            text_num_key_value_heads=1,
            text_intermediate_size=16,
            num_layerwise_text_blocks=1,
            num_refiner_text_blocks=1,
            axes_dims_rope=(4, 2, 2),
        ),
        "vae": AutoencoderKLQwenImage(
            base_dim=24,
            z_dim=4,
            dim_mult=[1, 2, 4],
            num_res_blocks=1,
            temperal_downsample=[False, True],
            latents_mean=[0.0] * 4,
            latents_std=[1.0] * 4,
        ),
        "scheduler": FlowMatchEulerDiscreteScheduler(use_dynamic_shifting=True),
        "text_encoder": Qwen3VLModel(Qwen3VLConfig(text_config=text, vision_config=vision, vocab_size=152064)).eval(),
        "tokenizer": text_repos.qwen2_tokenizer(),
    }


@pytest.mark.parametrize("blocks", ["Krea2AutoBlocks", "Krea2TurboAutoBlocks"])
def test_krea2s_stand_in_deepens_the_classic_text_encoder_to_the_layers_its_blocks_read(
    monkeypatch: pytest.MonkeyPatch, blocks: str
) -> None:
    """Bug twin: the classic tester's components raise in the blocks' text encoder step (they stack hidden states up
    to the 36th); the stand-in's return a call."""
    import torch
    from diffusers import modular_pipelines

    from pytest_nosync.census.hub_standins import modular_builds

    monkeypatch.setattr(modular_builds, "_classic_components", lambda *source: _krea2_classic_components())
    inputs = {"prompt": "a cat", "num_inference_steps": 2, "height": 32, "width": 32, "max_sequence_length": 16,
              "output_type": "pt"}  # fmt: skip
    for components, raises in (
        (_krea2_classic_components(), True),
        (modular_repos.components_for(REPO_KREA2)(), False),
    ):
        pipe = getattr(modular_pipelines, blocks)().init_pipeline(None)
        pipe.update_components(**{k: v for k, v in components.items() if k in pipe._component_specs})
        if raises:
            with pytest.raises(IndexError):
                pipe(**inputs, generator=torch.Generator().manual_seed(0))
        else:
            assert components["text_encoder"].config.text_config.num_hidden_layers == 35
            assert components["transformer"].config.num_text_layers == 12
            assert pipe(**inputs, generator=torch.Generator().manual_seed(0)) is not None


REPO_KREA2 = "hf-internal-testing/tiny-krea2-modular-pipe"


def test_the_helios_pyramid_stand_in_has_the_testers_two_stages_and_a_block_noise_the_cpu_can_draw(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its scheduler has the stages the pyramid tester's steps list has; the block noise correction of its blocks
    draws with the scheduler's gamma: the default one's covariance is singular (a float32 Cholesky on the CPU raises),
    the stand-in's is not."""
    import torch
    from diffusers import HeliosScheduler
    from diffusers.modular_pipelines.helios.denoise import sample_block_noise

    from pytest_nosync.census.hub_standins import modular_builds

    classic = {"scheduler": HeliosScheduler(stage_range=[0, 1], stages=1)}  # the classic Helios tester's: one stage
    monkeypatch.setattr(modular_builds, "_classic_components", lambda *source: dict(classic))
    scheduler = modular_repos.components_for("hf-internal-testing/tiny-helios-pyramid-modular-pipe")()["scheduler"]
    assert scheduler.config.stages == 2
    draw = {"generator": torch.Generator().manual_seed(0), "device": torch.device("cpu")}
    with pytest.raises(torch.linalg.LinAlgError):
        sample_block_noise(1, 4, 2, 4, 4, HeliosScheduler().config.gamma, **draw)
    assert sample_block_noise(1, 4, 2, 4, 4, scheduler.config.gamma, **draw).shape == (1, 4, 2, 4, 4)


def test_the_distilled_helios_repository_steps_a_dmd_scheduler_of_the_pyramids_stages_without_guidance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The released repository the distilled class is built from (RELEASED_IN): the scheduler its blocks step with
    their DMD arguments, of the pyramid stand-in's stages and gamma, and a guider of scale 1 (no CFG)."""
    from diffusers import HeliosDMDScheduler, HeliosScheduler

    from pytest_nosync.census.hub_standins import modular_builds

    classic = {"scheduler": HeliosScheduler(stage_range=[0, 1], stages=1)}
    monkeypatch.setattr(modular_builds, "_classic_components", lambda *source: dict(classic))
    repo = modular_repos.RELEASED_IN["HeliosPyramidDistilledModularPipeline"]
    components = modular_repos.components_for(repo)()
    pyramid = modular_repos.components_for("hf-internal-testing/tiny-helios-pyramid-modular-pipe")()["scheduler"]
    assert isinstance(components["scheduler"], HeliosDMDScheduler)
    assert (components["scheduler"].config.stages, components["scheduler"].config.gamma) == (2, pyramid.config.gamma)
    assert components["guider"].guidance_scale == 1.0


def test_the_ltx25_stand_in_decodes_its_classic_vaes_latents_to_the_vaes_own_video_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The LTX-2.5 blocks size their latents by the VAE and decode them with the diffusion decoder: the stand-in's
    decoder takes the classic VAE's latents and gives the video that VAE gives (a released-size decoder, 32x in space,
    would ask its neighborhood attention for a mask over 16x the pixels, beyond this machine's memory)."""
    import torch
    from diffusers import AutoencoderKLLTX2Video

    from pytest_nosync.census.hub_standins import modular_builds

    torch.manual_seed(0)
    vae = AutoencoderKLLTX2Video(
        latent_channels=4, block_out_channels=(8,), decoder_block_out_channels=(8,), layers_per_block=(1,),
        decoder_layers_per_block=(1, 1), spatio_temporal_scaling=(True,), decoder_spatio_temporal_scaling=(True,),
        decoder_inject_noise=(False, False), downsample_type=("spatial",), upsample_residual=(False,),
        upsample_factor=(1,), timestep_conditioning=False, patch_size=1, patch_size_t=1, encoder_causal=True,
        decoder_causal=False,
    )  # fmt: skip
    monkeypatch.setattr(modular_builds, "_classic_components", lambda *source: {"vae": vae})
    decoder = modular_repos.components_for("hf-internal-testing/tiny-ltx2-5-modular-pipe")()["diffusion_decoder"]
    latents = torch.randn(1, 4, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = vae.decode(latents).sample.shape
        assert decoder.decode(latents, generator=torch.Generator().manual_seed(0)).sample.shape == expected


def test_the_distilled_cosmos3_stand_in_gives_its_blocks_the_fixed_schedule_and_its_scheduler(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bug twin: the classic tester's components leave the distilled blocks' set-timesteps step without a schedule (it
    raises); the stand-in sets the pipeline config as the repository's `modular_model_index.json` does."""
    from diffusers import UniPCMultistepScheduler
    from diffusers.modular_pipelines import Cosmos3DistilledBlocks

    from pytest_nosync.census.hub_standins import modular_builds

    classic = {"scheduler": UniPCMultistepScheduler()}  # the classic Cosmos 3 tester's scheduler class
    monkeypatch.setattr(modular_builds, "_classic_components", lambda *source: dict(classic))
    stand_in = modular_repos.components_for("hf-internal-testing/tiny-cosmos3-distilled-modular-pipe")()
    block = Cosmos3DistilledBlocks().sub_blocks["denoise"].sub_blocks["set_timesteps"]
    for components, raises in ((classic, True), (stand_in, False)):
        pipe = block.init_pipeline(None)
        pipe.update_components(**components)
        if raises:
            with pytest.raises(ValueError, match="requires the pipeline config `distilled_sigmas`"):
                pipe(num_inference_steps=4, output="timesteps")
        else:
            assert len(pipe(num_inference_steps=4, output="timesteps")) == 4


def test_a_stand_in_whose_components_the_blocks_refuse_is_not_checked_with_its_reason(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug twin: components that `update_components` refuses (a misfit stand-in, as Wan Animate's components were for
    Wan Animate 2's blocks) were the pipeline's `error` finding, a failed check; they are the stand-in's: not checked,
    with the reason."""
    misfit = "nosync-twins/misfit-modular-repo"
    monkeypatch.setitem(modular_repos.MODULAR_STANDINS, misfit, lambda: {"scheduler": object()})
    pytester.makepyfile(test_modular_pipeline_misfit=CONFIGS.format(read=False, repo=misfit))
    result = pytester.runpytest("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)
    out = result.stdout.str()
    assert "0 of 1 checks reached a verdict; 0 of 1 pipeline classes fully checked; 1 not checkable" in out, out
    assert f"the stand-in of {misfit} in" in out and "raised ValueError: Cannot create ComponentSpec" in out, out


MODLOOP = """
from tests.twins import modular_loop as base


class ScaledAfterDenoiser(base.LoopAfterDenoiser):
    def __call__(self, components, block_state, i, t):
        block_state.noise = 0.1 * block_state.noise  # the scaled step
        return super().__call__(components, block_state, i, t)


def never_run():
    return 0


class ScaledLoop(base.DenoiseLoop):
    block_classes = [base.LoopDenoiser, ScaledAfterDenoiser]
    block_names = ["denoiser", "after_denoiser"]


class ScaledBlocks(base.LoopBlocks):
    block_classes = [base.SetTimesteps, ScaledLoop]
"""


def _scaled_configs(repo: str) -> str:
    """Two configs: one on the blocks of modloop.py (the pytester directory's, so a branch can change them), one on
    the twins' own blocks."""
    own_blocks = "from tests.twins.modular_loop import LoopBlocks"
    configs = CONFIGS.format(read=False, repo=repo)
    configs = configs.replace(own_blocks, f"from modloop import ScaledBlocks\n{own_blocks}")
    configs = configs.replace("pipeline_blocks_class = LoopBlocks", "pipeline_blocks_class = ScaledBlocks", 1)
    own = configs.index("class TestLoopModularPipelineAgain")
    return configs[:own] + OTHER_CONFIG.format(repo=repo)


OTHER_CONFIG = """
class TestOwnBlocksModularPipelineFast(LoopModularTesterConfig):
    pipeline_blocks_class = LoopBlocks
"""


def test_changed_runs_the_modular_configs_whose_loop_blocks_a_change_touches(pytester: pytest.Pytester) -> None:
    """--nosync-changed over modular configs: the code their loop blocks ran is recorded like a classic tester's."""
    from tests.census.test_tester_classes import _git, _main_branch

    pytester.syspathinsert()
    pytester.makepyfile(modloop=MODLOOP, test_modular_pipeline_scaled=_scaled_configs(REPO))
    _main_branch(pytester)
    args = ("-m", "gpu", "--nosync", "-k", "syncs")
    pytester.runpytest(*args).assert_outcomes(passed=2)  # both recorded
    _git(pytester, "switch", "-q", "-c", "branch")

    blocks = pytester.path / "modloop.py"
    main = blocks.read_text()
    blocks.write_text(main.replace("return 0", "return 1"))  # a function no config ran
    result = pytester.runpytest(*args, "--nosync-changed")
    result.assert_outcomes()
    assert "0 of 2 pipeline tester classes run" in result.stdout.str(), result.stdout.str()

    blocks.write_text(main.replace("0.1 * block_state", "0.2 * block_state"))  # in the step one config's loop ran
    result = pytester.runpytest(*args, "--nosync-changed")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "1 of 2 pipeline tester classes run: 1 touched by the change" in out, out
    assert "TestLoopModularPipelineFast: modloop.py (ScaledAfterDenoiser.__call__)" in out, out
    assert "TestOwnBlocksModularPipelineFast::nosync[syncs] PASSED" not in out


GATED_BLOCKS = """
from tests.twins import modular_loop as base


class ReadingAfterDenoiser(base.LoopAfterDenoiser):
    def __call__(self, components, block_state, i, t):
        block_state.noise = block_state.noise * float(t)  # main's sync, accepted in the baseline
        return super().__call__(components, block_state, i, t)


class ReadingLoop(base.DenoiseLoop):
    block_classes = [base.LoopDenoiser, ReadingAfterDenoiser]
    block_names = ["denoiser", "after_denoiser"]


class ReadingBlocks(base.LoopBlocks):
    block_classes = [base.SetTimesteps, ReadingLoop]
"""


def test_the_baseline_gates_modular_configs_as_it_gates_tester_classes(pytester: pytest.Pytester) -> None:
    """Written on main, a modular loop's known sync stays known when the code around it moves; a sync a branch adds
    fails at its line."""
    pytester.syspathinsert()
    configs = CONFIGS.format(read=False, repo=REPO).replace(
        "from tests.twins.modular_loop import LoopBlocks", "from gated_blocks import ReadingBlocks as LoopBlocks"
    )
    pytester.makepyfile(test_modular_pipeline_gated=configs)
    blocks = pytester.path / "gated_blocks.py"
    args = ("-m", "gpu", "--nosync", "-k", "syncs", "-p", "no:cacheprovider")

    blocks.write_text(GATED_BLOCKS)
    pytester.runpytest(*args, "--nosync-baseline-write=base.json").assert_outcomes(passed=1)  # recorded
    (entry,) = json.loads((pytester.path / "base.json").read_text())["entries"]
    assert (entry["file"], entry["code"]) == ("gated_blocks.py", "block_state.noise = block_state.noise * float(t)")

    blocks.write_text("# moved down by a comment\n\n" + GATED_BLOCKS)
    pytester.runpytest(*args, "--nosync-baseline=base.json").assert_outcomes(passed=1)

    marker = "        scale = float(block_state.latents.abs().max())  # added"
    added = GATED_BLOCKS.replace("        return super()", f"{marker}\n        return super()")
    blocks.write_text(added)
    result = pytester.runpytest(*args, "--nosync-baseline=base.json")
    result.assert_outcomes(failed=1)
    line = added.splitlines().index(marker) + 1
    result.stdout.fnmatch_lines([f"*dtoh_sync*gated_blocks.py:{line}*", "*known issues*", "*gated_blocks.py:7*"])


def test_a_modular_config_has_its_row_in_the_scenario_map(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """The scenario map of a census with a modular config: its row, a verdict per scenario the emulation runs."""
    from pytest_nosync import cli

    pytester.makepyfile(test_modular_pipeline_loop=CONFIGS.format(read=False, repo=REPO))
    scenarios = "--nosync-scenarios=plain,layerwise_casting,group_offload_block"
    args = ("-m", "gpu", "--nosync", "-k", "nosync and syncs", "-p", "no:cacheprovider", scenarios)
    pytester.runpytest(*args, "--nosync-report=report.json").assert_outcomes(passed=2, failed=1)
    capsys.readouterr()
    report = str(pytester.path / "report.json")
    assert cli.main(["census", "scenarios", report, "--check", "syncs"]) == 0
    out = capsys.readouterr().out
    # the row is the blocks' pipeline class (the twins' blocks make a plain ModularPipeline), a count in each column
    (row,) = [line.split(" | ") for line in out.splitlines() if line.startswith("| ModularPipeline |")]
    assert len(row) == 4 and all(cell.strip(" |").isdigit() for cell in row[1:]), out
