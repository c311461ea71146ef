"""Stand-ins for vision-language repositories: Qwen2-VL, Qwen3-VL and Gemma 3.

The dummy Qwen text encoders of the tests are built with the real special-token ids (`<|image_pad|>` 151655,
`<|vision_start|>` 151652…) and 151936 or 152064 ids, and the pipelines render chat templates and run the
processor on small images, so the stand-ins keep those ids, ship a chat template, and a 14-pixel patch image
processor (the dummy vision towers use `patch_size=14`). The EasyAnimate tests load the Qwen2-VL weights themselves
and build their transformer with `text_embed_dim=16`: the Qwen2-VL stand-in is 16 wide. The LTX-2 tests size their
connectors from the Gemma 3 config, whose width must equal the connectors' 4 heads x 8: 32.
"""

from __future__ import annotations

import json
from pathlib import Path

from .seeded import save_seeded_model
from .text_repos import QWEN2_SPECIAL_IDS, QWEN_CHAT_TEMPLATE, save_gemma_tokenizer, save_qwen2_tokenizer

QWEN_VOCAB_SIZE = 151936
QWEN_IMAGE_PIXELS = {"shortest_edge": 56 * 56, "longest_edge": 28 * 28 * 256}


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
    from transformers import Qwen2VLImageProcessor

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
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    config = Qwen2VLConfig(
        text_config={
            "vocab_size": QWEN_VOCAB_SIZE,
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
            "max_position_embeddings": 1024,
            "rope_scaling": {"type": "mrope", "rope_type": "default", "mrope_section": [1, 1, 2]},
            "rope_theta": 1000000.0,
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
        image_token_id=QWEN2_SPECIAL_IDS["<|image_pad|>"],
        video_token_id=QWEN2_SPECIAL_IDS["<|video_pad|>"],
        vision_start_token_id=QWEN2_SPECIAL_IDS["<|vision_start|>"],
        vision_end_token_id=QWEN2_SPECIAL_IDS["<|vision_end|>"],
        tie_word_embeddings=True,
    )
    save_seeded_model(lambda: Qwen2VLForConditionalGeneration(config), directory)
    save_qwen_processor(
        directory, processor_class="Qwen2VLProcessor", video_processor_type="Qwen2VLVideoProcessor", patch_size=14
    )


def build_qwen3_vl(directory: Path) -> None:
    """Qwen3VLForConditionalGeneration (text width 16, vision patch 16), Qwen2 tokenizer, Qwen3-VL processor."""
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

    config = Qwen3VLConfig(
        text_config={
            "vocab_size": QWEN_VOCAB_SIZE,
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
            "head_dim": 8,
            "max_position_embeddings": 1024,
            "rope_scaling": {"rope_type": "default", "mrope_section": [1, 1, 2], "mrope_interleaved": True},
            "rope_theta": 1000000.0,
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
        image_token_id=QWEN2_SPECIAL_IDS["<|image_pad|>"],
        video_token_id=QWEN2_SPECIAL_IDS["<|video_pad|>"],
        vision_start_token_id=QWEN2_SPECIAL_IDS["<|vision_start|>"],
        vision_end_token_id=QWEN2_SPECIAL_IDS["<|vision_end|>"],
        tie_word_embeddings=True,
    )
    save_seeded_model(lambda: Qwen3VLForConditionalGeneration(config), directory)
    save_qwen_processor(
        directory, processor_class="Qwen3VLProcessor", video_processor_type="Qwen3VLVideoProcessor", patch_size=16
    )


def build_gemma3(directory: Path) -> None:
    """Gemma3ForConditionalGeneration (text width 32, 2 layers; a 2-layer SigLIP tower) and a Gemma tokenizer."""
    from transformers import AutoTokenizer, Gemma3Config, Gemma3ForConditionalGeneration

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
    """A SiglipVisionModel of width 32 on 30-pixel images (FramePack's `image_proj_dim=32`) and its processor."""
    from transformers import SiglipImageProcessor, SiglipVisionConfig, SiglipVisionModel

    config = SiglipVisionConfig(
        hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4, image_size=30, patch_size=2
    )
    save_seeded_model(lambda: SiglipVisionModel(config), directory)
    SiglipImageProcessor(size={"height": 30, "width": 30}).save_pretrained(str(directory))


def build_dpt_processor(directory: Path) -> None:
    """A DPT image processor for 32-pixel inputs (the depth tests build DPT with `image_size=32`)."""
    from transformers import DPTImageProcessor

    DPTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(str(directory))


def build_clap_feature_extractor(directory: Path) -> None:
    """A CLAP feature extractor with 8 mel bins (the AudioLDM2 tests' CLAP audio tower: `num_mel_bins=8`)."""
    from transformers import ClapFeatureExtractor

    ClapFeatureExtractor(feature_size=8).save_pretrained(str(directory))


def build_mistral_processor(directory: Path) -> None:
    """A Pixtral processor (Mistral Small 3.1's): the Mistral tokenizer stand-in, a Pixtral image processor for
    6-pixel patches (the Flux.2 tests' Pixtral tower), and Mistral's chat template."""
    from transformers import PixtralImageProcessor

    from .text_repos import MISTRAL_CHAT_TEMPLATE, save_mistral_tokenizer

    save_mistral_tokenizer(directory)
    save_processor_files(
        directory,
        processor_class="PixtralProcessor",
        image_processor=PixtralImageProcessor(patch_size=6, size={"longest_edge": 30}),
        image_processor_type="PixtralImageProcessor",
        chat_template=MISTRAL_CHAT_TEMPLATE,
        processor_config={"patch_size": 6, "spatial_merge_size": 1, "image_token": "[IMG]"},
    )
