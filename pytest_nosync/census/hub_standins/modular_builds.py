"""Components built in code for the Modular Diffusers repositories of families with no classic tester to borrow from,
or whose classic tester's components the blocks need resized (Krea 2).

Each function returns a modular repository's components by name (census.hub_standins.modular_repos.MODULAR_STANDINS):
tiny configs of the model classes its blocks' `expected_components` name, sized to fit one another and the tester's
`get_dummy_inputs`, with seeded random weights, and tokenizers built with the `tokenizers` library (the builders of
text_repos, saved to a temporary directory and loaded by the class the blocks expect). The hub repositories' own tiny
configs are not known here; how each differs: docs/census.md, "Modular Diffusers".
"""

from __future__ import annotations

from typing import Any

import transformers
from diffusers import (
    AnimaTextConditioner,
    AutoencoderKLFlux2,
    AutoencoderKLMiniMaxH3,
    AutoencoderKLMiniMaxH3Audio,
    AutoencoderKLQwenImage,
    AutoencoderKLWan,
    ClassifierFreeGuidance,
    CosmosTransformer3DModel,
    ErnieImageTransformer2DModel,
    FlowMatchEulerDiscreteScheduler,
    HeliosDMDScheduler,
    HeliosScheduler,
    LTX2VideoDiffusionDecoderModel,
    MiniMaxH3Scheduler,
    MiniMaxH3Transformer3DModel,
    MiniMaxMusic3ConditionEncoder,
    MiniMaxMusic3RVQDepthDecoder,
    MiniMaxMusic3Transformer1DModel,
    MiniMaxMusic3Vocoder,
    WanAnimate2Transformer3DModel,
)
from diffusers.utils import is_torchvision_available
from transformers import (
    AutoTokenizer,
    CLIPVisionConfig,
    CLIPVisionModel,
    Mistral3Config,
    Mistral3Model,
    MistralConfig,
    PixtralVisionConfig,
    Qwen3Config,
    Qwen3ForCausalLM,
    Qwen3Model,
    Qwen3VLForConditionalGeneration,
    Qwen3VLProcessor,
    T5TokenizerFast,
    UMT5EncoderModel,
)

from ..made_models import ltx2_diffusion_decoder
from ..tiny_models import rebuilt
from .classic_components import classic_components as _classic_components
from .seeded import seeded_model
from .text_repos import (
    T5_WIDTH,
    loaded_tokenizer,
    qwen2_tokenizer,
    save_llama_tokenizer,
    save_t5_tokenizer,
    t5_config,
)
from .vision_language_repos import QWEN_VL_TEXT, qwen3_vl_config

QWEN3_VOCAB_SIZE = 151936  # above the Qwen2 tokenizer's special ids (151643…), as Qwen3's own


def _tiny_decoder(width: int) -> dict[str, Any]:
    """The tiny decoder-only language model of the Qwen3 and Mistral text encoders: width `width`, 2 layers of 2
    heads (2 key-value heads), 512 positions."""
    return {
        "hidden_size": width,
        "intermediate_size": width,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "head_dim": width // 2,
        "max_position_embeddings": 512,
    }


def _tiny_qwen3(hidden_size: int, *, model: type = Qwen3Model, vocab_size: int = QWEN3_VOCAB_SIZE) -> Any:
    config = Qwen3Config(**_tiny_decoder(hidden_size), vocab_size=vocab_size)
    return seeded_model(lambda: model(config))


def _tiny_qwenimage_vae(z_dim: int) -> Any:
    return seeded_model(
        lambda: AutoencoderKLQwenImage(
            base_dim=z_dim * 6,
            z_dim=z_dim,
            dim_mult=[1, 2, 4],
            num_res_blocks=1,
            temperal_downsample=[False, True],
            latents_mean=[0.0] * z_dim,
            latents_std=[1.0] * z_dim,
        )
    )


def anima() -> dict[str, Any]:
    """Anima: a Qwen3 text encoder (width 16) into a text conditioner (width 16, T5 ids as queries) into a Cosmos
    transformer (the classic Cosmos2 tester's, 16 latent channels) over a QwenImage VAE (z 16, 4x spatial)."""
    width, channels = 16, 16
    t5_tokenizer = loaded_tokenizer(save_t5_tokenizer, T5TokenizerFast.from_pretrained)
    conditioner = seeded_model(
        lambda: AnimaTextConditioner(
            source_dim=width,
            target_dim=width,
            model_dim=width,
            num_layers=2,
            num_attention_heads=4,
            target_vocab_size=len(t5_tokenizer),
            min_sequence_length=16,
        )
    )
    transformer = seeded_model(
        lambda: CosmosTransformer3DModel(
            in_channels=channels,
            out_channels=channels,
            num_attention_heads=2,
            attention_head_dim=16,
            num_layers=2,
            mlp_ratio=2,
            text_embed_dim=width,
            adaln_lora_dim=4,
            max_size=(4, 32, 32),
            patch_size=(1, 2, 2),
            rope_scale=(2.0, 1.0, 1.0),
            # the padding mask's resize is torchvision's: without it, the stand-in's transformer takes none
            concat_padding_mask=is_torchvision_available(),
            extra_pos_embed_type="learnable",
        )
    )
    return {
        "text_encoder": _tiny_qwen3(width),
        "tokenizer": qwen2_tokenizer(),
        "t5_tokenizer": t5_tokenizer,
        "text_conditioner": conditioner,
        "transformer": transformer,
        "vae": _tiny_qwenimage_vae(channels),
        "scheduler": FlowMatchEulerDiscreteScheduler(),
    }


def _llama_tokenizer() -> Any:
    return loaded_tokenizer(save_llama_tokenizer, AutoTokenizer.from_pretrained)


def ernie_image() -> dict[str, Any]:
    """Ernie Image: a Mistral3 text encoder (text width 16, 1000 ids, a tiny Pixtral vision tower it never runs) into
    an ErnieImage transformer (diffusers' own model test's config, 16 channels) over a Flux2 VAE (4 latent channels,
    one block: 2x with the 2x2 patches). No prompt enhancer (`pe`): the tester does not enable it."""
    width, channels = 16, 16
    text = MistralConfig(vocab_size=1000, **_tiny_decoder(width))
    vision = PixtralVisionConfig(
        hidden_size=width, intermediate_size=width, num_hidden_layers=1, num_attention_heads=2, image_size=32
    )
    config = Mistral3Config(text_config=text, vision_config=vision)
    transformer = seeded_model(
        lambda: ErnieImageTransformer2DModel(
            hidden_size=16,
            num_attention_heads=1,
            num_layers=1,
            ffn_hidden_size=16,
            in_channels=channels,
            out_channels=channels,
            patch_size=1,
            text_in_dim=width,
            rope_theta=256,
            rope_axes_dim=(8, 4, 4),
            eps=1e-6,
            qk_layernorm=True,
        )
    )
    vae = seeded_model(
        lambda: AutoencoderKLFlux2(
            sample_size=32,
            in_channels=3,
            out_channels=3,
            down_block_types=("DownEncoderBlock2D",),
            up_block_types=("UpDecoderBlock2D",),
            block_out_channels=(4,),
            layers_per_block=1,
            latent_channels=channels // 4,
            norm_num_groups=1,
            use_quant_conv=False,
            use_post_quant_conv=False,
        )
    )
    return {
        "text_encoder": seeded_model(lambda: Mistral3Model(config)),
        "tokenizer": _llama_tokenizer(),
        "transformer": transformer,
        "vae": vae,
        "scheduler": FlowMatchEulerDiscreteScheduler(),
    }


def wan_animate_2() -> dict[str, Any]:
    """Wan Animate 2 (base and distilled: the same models): a UMT5 text encoder (width 32) and a CLIP vision encoder
    (width 1280, which the transformer's image projection fixes; 2 layers, 16 patches) into a WanAnimate2 transformer
    (diffusers' own model test's config) over a Wan VAE (z 16, 8x spatial, the classic Wan Animate tester's)."""
    channels, condition_channels = 16, 20  # latents; the condition latents plus a 4-channel i2v mask
    vision = CLIPVisionConfig(
        hidden_size=1280,
        intermediate_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=224,
        patch_size=56,
    )
    transformer = seeded_model(
        lambda: WanAnimate2Transformer3DModel(
            patch_size=(1, 2, 2),
            text_len=16,
            in_dim=channels + condition_channels,
            dim=128,
            ffn_dim=256,
            freq_dim=64,
            text_dim=T5_WIDTH,
            out_dim=channels,
            num_heads=4,
            num_layers=2,
            cross_attn_norm=True,
            use_img_emb=True,
        )
    )
    vae = seeded_model(
        lambda: AutoencoderKLWan(
            base_dim=3, z_dim=channels, dim_mult=[1, 1, 1, 1], num_res_blocks=1, temperal_downsample=[False, True, True]
        )
    )
    return {
        "text_encoder": seeded_model(lambda: UMT5EncoderModel(t5_config("umt5")).eval()),
        "tokenizer": loaded_tokenizer(save_t5_tokenizer, AutoTokenizer.from_pretrained),
        "image_encoder": seeded_model(lambda: CLIPVisionModel(vision).eval()),
        "transformer": transformer,
        "vae": vae,
        "scheduler": FlowMatchEulerDiscreteScheduler(shift=7.0),
    }


KREA2_TEXT_LAYERS = 35  # hidden states 0..35: the modular blocks stack a fixed 12 of them, up to the 36th


def krea2() -> dict[str, Any]:
    """Krea 2's classic tester's components, its text encoder deep enough for the modular blocks' fixed selection of
    12 hidden states (KREA2_TEXT_ENCODER_SELECT_LAYERS, the released model's) and its transformer taking 12 text
    layers: the classic pipeline selects 3 of 2 layers (its `text_encoder_select_layers`, which the blocks never
    read)."""
    components = _classic_components("tests.pipelines.krea2.test_krea2", "Krea2PipelineFastTests")
    encoder = components["text_encoder"]
    config = encoder.config.to_dict()
    text = {k: v for k, v in config["text_config"].items() if k != "layer_types"}  # derived again from the depth
    config["text_config"] = {**text, "num_hidden_layers": KREA2_TEXT_LAYERS}
    deeper = type(encoder.config).from_dict(config)
    components["text_encoder"] = seeded_model(lambda: type(encoder)(deeper).eval())
    components["transformer"] = seeded_model(lambda: rebuilt(components["transformer"], {"num_text_layers": 12}))
    return components


# A distilled Cosmos 3 repository's `modular_model_index.json` sets the pipeline config's fixed schedule, which its
# blocks read (and refuse to run without), for the flow-matching scheduler their set-timesteps step names; the tiny
# repository's schedule has 4 steps (its tester's `num_inference_steps`), whose values are not known here: 4 evenly
# spaced sigmas, the step count being what the census's checks depend on.
COSMOS3_DISTILLED_SIGMAS = [1.0, 0.75, 0.5, 0.25]


def cosmos3_distilled() -> dict[str, Any]:
    """Cosmos 3's classic tester's components with the distilled repository's scheduler and fixed schedule."""
    components = _classic_components("tests.pipelines.cosmos.test_cosmos3", "Cosmos3OmniPipelineFastTests")
    components["scheduler"] = FlowMatchEulerDiscreteScheduler()
    return {**components, "distilled_sigmas": COSMOS3_DISTILLED_SIGMAS}  # a config value: update_components sets it


def helios_pyramid() -> dict[str, Any]:
    """Helios's classic tester's components with a pyramid scheduler: two stages, as the pyramid tester's
    `pyramid_num_inference_steps_list` has ([2, 2]; the classic tester's has one). Its block noise correction draws
    from a covariance over each 2x2 patch whose smallest eigenvalue is 1 - 3 * gamma: the default gamma (1/3) leaves
    it singular but for a 1e-8 jitter, which a float32 Cholesky on the CPU refuses; 0.25 keeps it positive."""
    components = _classic_components("tests.pipelines.helios.test_helios", "HeliosPipelineFastTests")
    components["scheduler"] = HeliosScheduler(**HELIOS_PYRAMID_STAGES)
    return components


HELIOS_PYRAMID_STAGES = {"stages": 2, "stage_range": [0, 0.5, 1], "gamma": 0.25, "use_dynamic_shifting": True}


def helios_pyramid_distilled() -> dict[str, Any]:
    """The released distilled Helios repository (BestWishYsh/Helios-Distilled), which no modular tester loads: the
    pyramid stand-in's components with the DMD scheduler the distilled blocks step (they pass it `cur_sampling_step`
    and the stage's start point, which HeliosScheduler takes not) and a guider of guidance scale 1 (the distilled
    model's: no CFG, the scale the blocks' own denoise spec sets). The released scheduler has three stages; two here,
    as the pyramid tester's steps list has (its inputs are the ones the class runs with: the Helios tester's 16x16
    frames leave no latent pixel for a third stage), and the pyramid stand-in's gamma (a block noise covariance a
    float32 Cholesky on the CPU can factor). A guider of scale 5 (what the pipeline makes without one: its text encoder
    step's spec) keeps its step from the last call, past its stop with the distilled schedule's doubled first chunk,
    so a second call encodes no negative prompt that the loop's first step then asks for."""
    components = helios_pyramid()
    components["scheduler"] = HeliosDMDScheduler(**HELIOS_PYRAMID_STAGES)
    components["guider"] = ClassifierFreeGuidance(guidance_scale=1.0)
    return components


def ltx25() -> dict[str, Any]:
    """LTX-2's classic tester's components and a diffusion decoder of its VAE's latent space (made_models: at the
    VAE's compression, since the blocks size the latents by the VAE): the LTX-2.5 blocks decode with it."""
    components = _classic_components("tests.pipelines.ltx2.test_ltx2", "LTX2PipelineFastTests")
    components["diffusion_decoder"] = seeded_model(
        lambda: ltx2_diffusion_decoder(LTX2VideoDiffusionDecoderModel, components)
    )
    return components


# MiniMax Music 3's language model samples semantic codes at the fixed ids 151675 + 0..16383 (the blocks'
# _AUDIO_CODE_OFFSET and _SEMANTIC_VOCAB_SIZE): its vocabulary must reach past them, above Qwen3's own.
MUSIC3_VOCAB_SIZE = 151675 + 16384
MUSIC3_CODEBOOKS = 8  # the released count: the language model's code and 7 residual ones per frame


def minimax_music3() -> dict[str, Any]:
    """MiniMax Music 3: a Qwen3 language model (width 16, MUSIC3_VOCAB_SIZE ids) and an RVQ depth decoder of its
    width sample 8 codes a frame; a condition encoder mixes the frame's 8 hidden states onto the latent timeline of a
    MiniMaxMusic3 transformer (4 latent channels), which a vocoder upsampling 512x decodes. The frame and latent rates
    are the released ones (25 Hz frames, 512-sample latents at 44.1 kHz), which the blocks read from the condition
    encoder: the tester's 0.2 s are 5 frames, 17 latents, one window."""
    width, channels = 16, 4  # channels: the vocoder folds them into two (stereo) streams, so even
    depth_decoder = seeded_model(
        lambda: MiniMaxMusic3RVQDepthDecoder(
            hidden_size=width,  # projects the language model's hidden states, adds to its embeddings
            num_layers=1,
            num_attention_heads=2,
            intermediate_size=width,
            audio_vocab_size=64,  # above the blocks' top-k of 50, so sampling still truncates
            num_codebooks=MUSIC3_CODEBOOKS,
            max_position_embeddings=MUSIC3_CODEBOOKS,  # a frame's depth sequence is its 8 codes long at most
        )
    )
    condition_encoder = seeded_model(
        lambda: MiniMaxMusic3ConditionEncoder(
            condition_hidden_dim=width, num_condition_layers=MUSIC3_CODEBOOKS, out_dim=width
        )
    )
    transformer = seeded_model(
        lambda: MiniMaxMusic3Transformer1DModel(
            in_channels=channels,
            condition_dim=width,  # the condition encoder's out_dim
            num_layers=2,
            num_attention_heads=2,
            attention_head_dim=8,
            ff_inner_dim=16,
            rotary_dim=4,  # rotates half of each 8-wide head
            fourier_embedding_dim=8,
        )
    )
    vocoder = seeded_model(
        lambda: MiniMaxMusic3Vocoder(
            latent_channels=channels,
            decoder_input_dim=8,
            decoder_hidden_dim=16,  # halved by each of the 4 blocks, to 1
            upsampling_ratios=(8, 8, 4, 2),  # 512x: the condition encoder's output_hop_length, which crops windows
        )
    )
    return {
        "tokenizer": qwen2_tokenizer(),
        "language_model": _tiny_qwen3(width, model=Qwen3ForCausalLM, vocab_size=MUSIC3_VOCAB_SIZE),
        "rvq_depth_decoder": depth_decoder,
        "condition_encoder": condition_encoder,
        "transformer": transformer,
        # time in [0, 1] from noise (0) to data, as the transformer and the blocks' overlap blend take it (the
        # released checkpoint's scheduler config): the defaults would pass it 1000..500 and step away from the data
        "scheduler": FlowMatchEulerDiscreteScheduler(num_train_timesteps=1, invert_sigmas=True),
        "vocoder": vocoder,
    }


class ImagesOnlyQwen3VLProcessor(Qwen3VLProcessor):
    """A Qwen3-VL processor without its video processor. transformers builds a Qwen3VLProcessor only with torchvision:
    its constructor checks the video processor's class (whatever is passed, None too) against a class it exports only
    with torchvision, while a processor's parts are the ones its `__init__` names, so this one's are the image
    processor and the tokenizer. The MiniMax H3 blocks read the video processor for a video reference alone."""

    def __init__(self, image_processor: Any = None, tokenizer: Any = None, chat_template: str | None = None) -> None:
        super().__init__(image_processor, tokenizer, None, chat_template=chat_template)


# The PIL backend where transformers has it: the default one needs torchvision.
_QWEN_VL_IMAGE_PROCESSOR = getattr(transformers, "Qwen2VLImageProcessorPil", transformers.Qwen2VLImageProcessor)
MINIMAX_H3_TEXT_LAYERS = 51  # the blocks condition on hidden_states[50] (the pipeline's text_encoder_layer)


def _minimax_h3_transformer(seed: int) -> Any:
    # the transformer model test's tiny config, on the stand-in's 4 video and 8 audio latent channels
    return seeded_model(
        lambda: MiniMaxH3Transformer3DModel(
            num_attention_heads=2, attention_head_dim=16, hidden_size=24, num_layers=2, num_refiner_layers=2,
            ffn_dim=32, in_channels=4, audio_in_channels=8, patch_size=(1, 2, 2),
            text_dim=QWEN_VL_TEXT["hidden_size"], freq_dim=8, time_embed_hidden_dim=24, time_embed_dim=16,
            rope_freq_dim=2,
        ),
        seed=seed,
    )  # fmt: skip


def minimax_h3() -> dict[str, Any]:
    """MiniMax H3: a Qwen3-VL conditioner of width 16 and 51 layers, the Qwen2 tokenizer stand-in, a Qwen3-VL
    processor without a video processor (ImagesOnlyQwen3VLProcessor; image processor of 16-pixel patches), the two
    transformer partitions (`transformer` for t2va and fl2va, `transformer_ref` for ref2va) of their own seeds, a video
    VAE 16x in space (the blocks' image and video processors' scale) and 4x in time at the released 17-frame clips (the
    tester's 124 frames: 37 latents), an audio VAE hopping 4 samples at 160 Hz (the blocks' 40 latents a second: the
    tester's 207 latents, 828 samples), and the released schedulers' shifts (12 video, 3 audio)."""
    tokenizer = qwen2_tokenizer()
    image_processor = _QWEN_VL_IMAGE_PROCESSOR(patch_size=16, merge_size=2, temporal_patch_size=2)
    vae = seeded_model(
        lambda: AutoencoderKLMiniMaxH3(
            latent_channels=4, block_out_channels=(8, 16), layers_per_block=1, spatial_downsample_factors=(4, 4),
            temporal_downsample_factors=(2, 2), norm_num_groups=8, decoder_num_layers=1,
            decoder_num_attention_heads=2, decoder_attention_head_dim=8, decoder_num_register_tokens=2,
            decoder_ffn_mult=2, latents_mean=(0.0,) * 4, latents_std=(1.0,) * 4,
        )
    )  # fmt: skip
    audio_vae = seeded_model(
        lambda: AutoencoderKLMiniMaxH3Audio(
            encoder_dim=4, encoder_rates=(2, 2), latent_dim=32, latent_channels=8, num_attention_heads=2,
            decoder_dim=16, decoder_rates=(2, 2), decoder_kernel_sizes=(4, 4), resblock_kernel_sizes=(3, 7),
            resblock_dilation_sizes=((1, 3), (1, 3)), sampling_rate=160, latents_mean=[0.0] * 8,
            latents_std=[1.0] * 8,
        )
    )  # fmt: skip
    config = qwen3_vl_config(num_hidden_layers=MINIMAX_H3_TEXT_LAYERS)
    return {
        "text_encoder": seeded_model(lambda: Qwen3VLForConditionalGeneration(config)),
        "tokenizer": tokenizer,
        "processor": ImagesOnlyQwen3VLProcessor(image_processor, tokenizer),
        "transformer": _minimax_h3_transformer(seed=0),
        "transformer_ref": _minimax_h3_transformer(seed=1),
        "vae": vae,
        "audio_vae": audio_vae,
        "scheduler": MiniMaxH3Scheduler(shift=12.0),
        "audio_scheduler": MiniMaxH3Scheduler(shift=3.0),
    }
