"""Stand-ins for vision-language repositories: Qwen2-VL, Qwen3-VL, Gemma 3 and GLM-Image's processor.

The dummy Qwen text encoders of the tests are built with the real special-token ids (`<|image_pad|>` 151655,
`<|vision_start|>` 151652…) and 151936 or 152064 ids, and the pipelines render chat templates and run the
processor on small images, so the stand-ins keep those ids, ship a chat template, and a 14-pixel patch image
processor (the dummy vision towers use `patch_size=14`). The EasyAnimate tests load the Qwen2-VL weights themselves
and build their transformer with `text_embed_dim=16`: the Qwen2-VL stand-in is 16 wide. The LTX-2 tests size their
connectors from the Gemma 3 config, whose width must equal the connectors' 4 heads x 8: 32. The GLM-Image tests
build their GlmImageForConditionalGeneration with the real token ids and a vision tower of 8-pixel patches, and load
only the processor.
"""

from __future__ import annotations

import json
from pathlib import Path

import transformers
from transformers import (
    AutoTokenizer,
    ClapFeatureExtractor,
    DPTImageProcessor,
    Gemma3Config,
    Gemma3ForConditionalGeneration,
    PixtralImageProcessor,
    Qwen2VLConfig,
    Qwen2VLForConditionalGeneration,
    Qwen2VLImageProcessor,
    SiglipImageProcessor,
    SiglipVisionConfig,
    SiglipVisionModel,
)

from .seeded import save_seeded_model
from .text_repos import (
    CLIP_VISION,
    GLM4_SPECIAL_IDS,
    MISTRAL_CHAT_TEMPLATE,
    QWEN2_SPECIAL_IDS,
    QWEN_CHAT_TEMPLATE,
    save_gemma_tokenizer,
    save_glm4_tokenizer,
    save_mistral_tokenizer,
    save_qwen2_tokenizer,
)

# Optional: transformers added Qwen3-VL and GLM-Image after the oldest release it supports (a transformers without
# GLM-Image leaves its stand-in out: its `requires`).
try:
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration
except ImportError:
    Qwen3VLConfig = Qwen3VLForConditionalGeneration = None
try:
    from transformers import GlmImageConfig
except ImportError:
    GlmImageConfig = None

QWEN_VOCAB_SIZE = 151936
QWEN_IMAGE_PIXELS = {"shortest_edge": 56 * 56, "longest_edge": 28 * 28 * 256}
# The Qwen-VL stand-ins' text model (16 wide, 2 layers) and the configs' vision token ids, at their real ids.
QWEN_VL_TEXT = {
    "vocab_size": QWEN_VOCAB_SIZE,
    "hidden_size": 16,
    "intermediate_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "max_position_embeddings": 1024,
    "rope_theta": 1000000.0,
}
QWEN_VL_TOKENS = {
    "image_token_id": QWEN2_SPECIAL_IDS["<|image_pad|>"],
    "video_token_id": QWEN2_SPECIAL_IDS["<|video_pad|>"],
    "vision_start_token_id": QWEN2_SPECIAL_IDS["<|vision_start|>"],
    "vision_end_token_id": QWEN2_SPECIAL_IDS["<|vision_end|>"],
}


def save_processor_files(
    directory: Path,
    *,
    processor_class: str,
    image_processor,
    image_processor_type: str,
    chat_template: str,
    processor_config: dict | None = None,
    video_config: dict | None = None,
) -> None:
    """The image-processor, processor, video-processor and chat-template files of a multimodal processor, next to a
    tokenizer already saved in `directory`.

    Written as files rather than through the processor class: constructing these processors needs torchvision,
    which loading them needs too, as it does for the real repositories. The separate files are the layout the hub
    repositories have, which transformers loads in every version.
    """
    image_processor.save_pretrained(str(directory))
    image_config = json.loads((directory / "preprocessor_config.json").read_text())
    image_config.update(image_processor_type=image_processor_type, processor_class=processor_class)
    _write_json(directory / "preprocessor_config.json", image_config)
    if processor_config is not None:
        _write_json(directory / "processor_config.json", {**processor_config, "processor_class": processor_class})
    if video_config is not None:
        shared = ("do_convert_rgb", "do_normalize", "do_rescale", "do_resize", "image_mean", "image_std")
        video = {key: image_config[key] for key in shared if key in image_config}
        _write_json(directory / "video_preprocessor_config.json", {**video, **video_config})
    (directory / "chat_template.jinja").write_text(chat_template)
    _write_json(directory / "chat_template.json", {"chat_template": chat_template})
    tokenizer_config = json.loads((directory / "tokenizer_config.json").read_text())
    tokenizer_config["processor_class"] = processor_class
    _write_json(directory / "tokenizer_config.json", tokenizer_config)


def save_qwen_processor(directory: Path, *, processor_class: str, video_processor_type: str, patch_size: int) -> None:
    """A Qwen-VL processor: the Qwen2 tokenizer stand-in, image and video processors with `patch_size` pixels."""
    save_qwen2_tokenizer(directory)
    patches = {"patch_size": patch_size, "merge_size": 2, "temporal_patch_size": 2}
    save_processor_files(
        directory,
        processor_class=processor_class,
        image_processor=Qwen2VLImageProcessor(size=QWEN_IMAGE_PIXELS, **patches),
        image_processor_type="Qwen2VLImageProcessor",
        chat_template=QWEN_CHAT_TEMPLATE,
        video_config={
            "video_processor_type": video_processor_type,
            "processor_class": processor_class,
            "size": QWEN_IMAGE_PIXELS,
            "rescale_factor": 1 / 255,
            **patches,
        },
    )


def _write_json(path: Path, content: dict) -> None:
    path.write_text(json.dumps(content, indent=2, sort_keys=True) + "\n")


def build_qwen2_vl(directory: Path) -> None:
    """Qwen2VLForConditionalGeneration (text width 16, 2 layers, vision depth 2), tokenizer, processor files."""
    config = Qwen2VLConfig(
        text_config={
            **QWEN_VL_TEXT,
            "rope_scaling": {"type": "mrope", "rope_type": "default", "mrope_section": [1, 1, 2]},
        },
        vision_config={
            "depth": 2,
            "embed_dim": 16,
            "hidden_size": 16,
            "num_heads": 2,
            "mlp_ratio": 2,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
        },
        **QWEN_VL_TOKENS,
        tie_word_embeddings=True,
    )
    save_seeded_model(lambda: Qwen2VLForConditionalGeneration(config), directory)
    save_qwen_processor(
        directory, processor_class="Qwen2VLProcessor", video_processor_type="Qwen2VLVideoProcessor", patch_size=14
    )


def qwen3_vl_config(**text: int) -> Qwen3VLConfig:
    """The Qwen3-VL stand-ins' config: text width 16 (2 layers, or as `text` overrides), a vision tower of 16-pixel
    patches."""
    return Qwen3VLConfig(
        text_config={
            **QWEN_VL_TEXT,
            **text,
            "head_dim": 8,
            "rope_scaling": {"rope_type": "default", "mrope_section": [1, 1, 2], "mrope_interleaved": True},
        },
        vision_config={
            "depth": 2,
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_heads": 2,
            "out_hidden_size": 16,
            "patch_size": 16,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "num_position_embeddings": 64,
            "deepstack_visual_indexes": [1],
        },
        **QWEN_VL_TOKENS,
        tie_word_embeddings=True,
    )


def build_qwen3_vl(directory: Path) -> None:
    """Qwen3VLForConditionalGeneration (text width 16, vision patch 16), Qwen2 tokenizer, Qwen3-VL processor."""
    save_seeded_model(lambda: Qwen3VLForConditionalGeneration(qwen3_vl_config()), directory)
    save_qwen_processor(
        directory, processor_class="Qwen3VLProcessor", video_processor_type="Qwen3VLVideoProcessor", patch_size=16
    )


def build_gemma3(directory: Path) -> None:
    """Gemma3ForConditionalGeneration (text width 32, 2 layers; a 2-layer SigLIP tower) and a Gemma tokenizer."""
    save_gemma_tokenizer(directory)
    tokenizer = AutoTokenizer.from_pretrained(str(directory))
    config = Gemma3Config(
        text_config={
            "vocab_size": 1000,
            "hidden_size": 32,
            "intermediate_size": 37,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "head_dim": 16,
            "max_position_embeddings": 1024,
            "sliding_window": 64,
        },
        vision_config={
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": 28,
            "patch_size": 14,
        },
        mm_tokens_per_image=4,
        boi_token_index=tokenizer.convert_tokens_to_ids("<start_of_image>"),
        eoi_token_index=tokenizer.convert_tokens_to_ids("<end_of_image>"),
        image_token_index=tokenizer.convert_tokens_to_ids("<start_of_image>"),
        pad_token_id=0,
        bos_token_id=2,
        eos_token_id=1,
    )
    save_seeded_model(lambda: Gemma3ForConditionalGeneration(config), directory)


def build_siglip_vision(directory: Path) -> None:
    """A SiglipVisionModel of width 32 on 30-pixel images (FramePack's `image_proj_dim=32`), sized as the tiny CLIP's
    vision tower, and its processor."""
    config = SiglipVisionConfig(**CLIP_VISION)
    save_seeded_model(lambda: SiglipVisionModel(config), directory)
    SiglipImageProcessor(size={"height": 30, "width": 30}).save_pretrained(str(directory))


def build_dpt_processor(directory: Path) -> None:
    """A DPT image processor for 32-pixel inputs (the depth tests build DPT with `image_size=32`)."""
    DPTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(str(directory))


def build_clap_feature_extractor(directory: Path) -> None:
    """A CLAP feature extractor with 8 mel bins (the AudioLDM2 tests' CLAP audio tower: `num_mel_bins=8`)."""
    ClapFeatureExtractor(feature_size=8).save_pretrained(str(directory))


def build_mistral_processor(directory: Path) -> None:
    """A Pixtral processor (Mistral Small 3.1's): the Mistral tokenizer stand-in, a Pixtral image processor for
    6-pixel patches (the Flux.2 tests' Pixtral tower), and Mistral's chat template."""
    save_mistral_tokenizer(directory)
    save_processor_files(
        directory,
        processor_class="PixtralProcessor",
        image_processor=PixtralImageProcessor(patch_size=6, size={"longest_edge": 30}),
        image_processor_type="PixtralImageProcessor",
        chat_template=MISTRAL_CHAT_TEMPLATE,
        processor_config={"patch_size": 6, "spatial_merge_size": 1, "image_token": "[IMG]"},
    )


# GLM-Image's tokenizer is GLM-4's with the model's vision vocabulary in front: `<|dit_token_N|>` hold the ids below
# GlmImageTextConfig's `vision_vocab_size` (16512), GLM-4's text and special ids follow, shifted by it (`<|endoftext|>`
# 167841 is the config's pad id, `<|image|>` 167855 its `image_token_id`). `<|dit_token_16384|>` and
# `<|dit_token_16385|>` are GlmImageConfig's `image_start_token_id` and `image_end_token_id`: the processor ends a
# text-to-image prompt with the tokenizer's bos token to start the image, and the model finds images between the two.
GLM_IMAGE_VISION_IDS = 16512
GLM_IMAGE_SPECIAL_IDS = {
    token: GLM_IMAGE_VISION_IDS + token_id for token, token_id in {**GLM4_SPECIAL_IDS, "<|image|>": 151343}.items()
}
GLM_IMAGE_NAMED_TOKENS = {
    "bos_token": "<|dit_token_16384|>",
    "eos_token": "<|dit_token_16385|>",
    "pad_token": "<|endoftext|>",
}
# Named tokens GlmImageProcessor reads off its tokenizer: the image placeholder and the brackets of the target grids.
GLM_IMAGE_PROCESSOR_TOKENS = {"image_token": "<|image|>", "grid_bos_token": "<sop>", "grid_eos_token": "<eop>"}

# The prompt as it is, each source image as a placeholder between the image start and end tokens, which the processor
# expands to one `<|image|>` per patch and the model's rope index looks for.
GLM_IMAGE_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<|dit_token_16384|><|image|><|dit_token_16385|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{% endfor %}"
)


def glm_image_config():
    """A GlmImageConfig of the GLM-Image tests' sizes, with the real token ids (the config's defaults)."""
    return GlmImageConfig(
        text_config={
            "vocab_size": 168064,
            "hidden_size": 32,
            "intermediate_size": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
            "max_position_embeddings": 512,
            "vision_vocab_size": 128,
            "rope_parameters": {"mrope_section": [4, 2, 2]},
        },
        vision_config={
            "depth": 2,
            "hidden_size": 32,
            "num_heads": 2,
            "image_size": 32,
            "patch_size": 8,
            "intermediate_size": 32,
        },
        vq_config={"embed_dim": 32, "num_embeddings": 128, "latent_channels": 32},
    )


def build_glm_image_processor(directory: Path) -> None:
    """GLM-Image's processor in `processor/` (the tests build every model themselves): the GLM-4 tokenizer stand-in
    with GLM-Image's vision tokens and ids, and an image processor for the tests' vision tower (8-pixel patches, no
    temporal or spatial merging, as its patch embedding and `spatial_merge_size` 1 take them). A config.json of the
    tests' sizes goes with them: offline, AutoTokenizer fails without one in the subfolder it loads from."""
    # The PIL backend where transformers has it: the torchvision one falls back to it, with a warning, without
    # torchvision.
    image_processor_class = getattr(transformers, "GlmImageImageProcessorPil", transformers.GlmImageImageProcessor)
    processor = directory / "processor"
    save_glm4_tokenizer(
        processor,
        special_ids=GLM_IMAGE_SPECIAL_IDS,
        leading_tokens=[f"<|dit_token_{i}|>" for i in range(GLM_IMAGE_VISION_IDS)],
        named_tokens=GLM_IMAGE_NAMED_TOKENS,
        # Left padding: the pipeline reads each prompt's generated image tokens after the longest prompt.
        extra_config={**GLM_IMAGE_PROCESSOR_TOKENS, "padding_side": "left"},
    )
    save_processor_files(
        processor,
        processor_class="GlmImageProcessor",
        # Sizes in pixels, for the tests' 32-pixel images (which the processor halves before patching).
        image_processor=image_processor_class(
            patch_size=8, temporal_patch_size=1, merge_size=1, size={"shortest_edge": 32 * 32, "longest_edge": 64 * 64}
        ),
        image_processor_type="GlmImageImageProcessor",
        chat_template=GLM_IMAGE_CHAT_TEMPLATE,
    )
    glm_image_config().save_pretrained(str(processor))
