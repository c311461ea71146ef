"""The GLM-Image processor stand-in gives GlmImagePipeline what it reads off the real one.

The pipeline renders its prompt with `processor.apply_chat_template(..., target_h=, target_w=)`, takes the image grids
from `image_grid_thw` to size the autoregressive generation, and the model finds the image to generate after the
tokenizer's bos token (GlmImageConfig's `image_start_token_id`): ids that differ from the model's make it generate
from the wrong position, or index past its 168064 embeddings.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from pytest_nosync.census.hub_standins import hub_standins
from pytest_nosync.census.hub_standins.vision_language_repos import glm_image_config

GLM_IMAGE = "zai-org/GLM-Image"
T5 = "hf-internal-testing/tiny-random-t5"
PROMPT = "A photo of a cat"


def _text_to_image(processor, prompt: str = PROMPT, size: int = 32) -> dict:
    """The processor's inputs as the pipeline asks for them for one prompt and no source image."""
    messages = [[{"role": "user", "content": [{"type": "text", "text": prompt}]}]]
    return processor.apply_chat_template(
        messages, tokenize=True, padding=False, target_h=size, target_w=size, return_dict=True, return_tensors="pt"
    )


@pytest.fixture
def glm_image_processor(standin_root: Path, empty_offline_hub: Path):
    pytest.importorskip("transformers.models.glm_image", reason="this transformers has no GLM-Image classes")
    from transformers import GlmImageProcessor

    with hub_standins(standin_root, offline=True, repos=[GLM_IMAGE]):
        return GlmImageProcessor.from_pretrained(GLM_IMAGE, subfolder="processor")


def test_special_tokens_have_the_ids_of_the_model(glm_image_processor) -> None:
    config, tokenizer = glm_image_config(), glm_image_processor.tokenizer
    assert tokenizer.bos_token_id == config.image_start_token_id == 16384
    assert tokenizer.eos_token_id == config.image_end_token_id == 16385
    assert glm_image_processor.image_token_id == config.image_token_id == 167855
    assert tokenizer.pad_token_id == config.text_config.pad_token_id == 167841
    grid_tokens = (glm_image_processor.grid_bos_token, glm_image_processor.grid_eos_token)
    assert tokenizer.convert_tokens_to_ids(list(grid_tokens)) == [167845, 167846]  # <sop>, <eop>
    assert len(tokenizer) <= config.text_config.vocab_size
    assert tokenizer.padding_side == "left"  # the pipeline reads batched generations after the longest prompt


def test_text_to_image_prompt_ends_in_the_target_grids_and_the_image_start(glm_image_processor) -> None:
    inputs = _text_to_image(glm_image_processor)
    ids = inputs["input_ids"][0]
    # 32 pixels: one token at 1/32 scale, and the 16 x 16 preview grid the processor always asks for first.
    assert inputs["image_grid_thw"].tolist() == [[1, 1, 1], [1, 16, 16]]
    assert inputs["images_per_sample"].tolist() == [2]
    text = glm_image_processor.tokenizer.decode(ids)
    assert text == f"{PROMPT}<sop>1 1<eop><sop>16 16<eop><|dit_token_16384|>"
    assert int(ids[-1]) == glm_image_config().image_start_token_id
    assert int(ids[:-1].min()) >= 16512  # text ids follow the vision vocabulary, as in the real tokenizer


def test_source_image_becomes_one_placeholder_per_patch_between_image_start_and_end(glm_image_processor) -> None:
    from PIL import Image

    content = [{"type": "image", "image": Image.new("RGB", (32, 32))}, {"type": "text", "text": PROMPT}]
    messages = [[{"role": "user", "content": content}]]
    inputs = glm_image_processor.apply_chat_template(
        messages, tokenize=True, target_h=32, target_w=32, return_dict=True, return_tensors="pt"
    )
    # Halved to 16 pixels, then 8-pixel patches of the tests' vision tower: a 2 x 2 grid, then the target's.
    assert inputs["image_grid_thw"].tolist() == [[1, 2, 2], [1, 1, 1]]
    assert inputs["pixel_values"].shape == (4, 3 * 8 * 8)
    assert inputs["input_ids"][0, :6].tolist() == [16384, *[167855] * 4, 16385]


def test_pipeline_runs_end_to_end_on_the_cpu(glm_image_processor, standin_root: Path) -> None:
    """One call of GlmImagePipeline built as diffusers' GlmImagePipelineFastTests builds it (about 10 s on 2 cores)."""
    diffusers = pytest.importorskip("diffusers")
    if not hasattr(diffusers, "GlmImagePipeline"):
        pytest.skip(f"diffusers {diffusers.__version__} has no GlmImagePipeline")
    with hub_standins(standin_root, offline=True, repos=[T5]):
        components = _dummy_components(glm_image_processor)
    pipe = diffusers.GlmImagePipeline(**components)
    pipe.set_progress_bar_config(disable=True)
    cpu, seed = torch.device("cpu"), torch.Generator(device="cpu").manual_seed(0)
    prior, _, _ = pipe.generate_prior_tokens(prompt=PROMPT, height=32, width=32, device=cpu, generator=seed)
    # The 1 x 1 target grid read off the processor's grids, upsampled twice, in the 128 codes of the tests' VQ model.
    assert prior.shape == (1, 4) and int(prior.max()) < 128
    images = pipe(
        prompt=PROMPT,
        generator=torch.Generator(device="cpu").manual_seed(0),
        num_inference_steps=2,
        guidance_scale=1.5,
        height=32,
        width=32,
        max_sequence_length=16,
        output_type="pt",
    ).images
    assert images.shape == (1, 3, 32, 32) and torch.isfinite(images).all()


def _dummy_components(processor) -> dict:
    """The tester's dummy components, sizes and seeds as in its `get_dummy_components()`."""
    from diffusers import AutoencoderKL, FlowMatchEulerDiscreteScheduler, GlmImageTransformer2DModel
    from transformers import AutoConfig, AutoTokenizer, GlmImageForConditionalGeneration, T5EncoderModel

    torch.manual_seed(0)
    text_encoder = T5EncoderModel(AutoConfig.from_pretrained(T5))
    torch.manual_seed(0)
    vision_language_encoder = GlmImageForConditionalGeneration(glm_image_config())
    torch.manual_seed(0)
    transformer = GlmImageTransformer2DModel(
        patch_size=2,
        in_channels=4,
        out_channels=4,
        num_layers=2,
        attention_head_dim=8,
        num_attention_heads=2,
        text_embed_dim=text_encoder.config.hidden_size,
        time_embed_dim=16,
        condition_dim=8,
        prior_vq_quantizer_codebook_size=128,
    )
    torch.manual_seed(0)
    vae = AutoencoderKL(
        block_out_channels=(4, 8, 16, 16),
        in_channels=3,
        out_channels=3,
        down_block_types=["DownEncoderBlock2D"] * 4,
        up_block_types=["UpDecoderBlock2D"] * 4,
        latent_channels=4,
        norm_num_groups=4,
        sample_size=128,
        latents_mean=[0.0] * 4,
        latents_std=[1.0] * 4,
    )
    return {
        "tokenizer": AutoTokenizer.from_pretrained(T5),
        "processor": processor,
        "text_encoder": text_encoder,
        "vision_language_encoder": vision_language_encoder,
        "vae": vae,
        "transformer": transformer,
        "scheduler": FlowMatchEulerDiscreteScheduler(),
    }
