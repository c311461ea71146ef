"""UniDiffuser: one U-ViT (UniDiffuserModel) denoising a VAE image, its CLIP image embedding and a text latent
together, a CLIP text encoder whose prompt a GPT-2 text decoder's prefix encoder narrows to that latent, and the same
decoder (with a GPT-2 tokenizer) turning text latents back into text.

It is driven in its text-to-image mode, the one a prompt selects (`_infer_mode`), with a tester's usual inputs:
each denoising step calls the U-ViT on the image's two latents with the prompt's text latent (its timestep 0), then,
for classifier-free guidance, with noise for the text at the last timestep; its output is the VAE's image alone, so
no GPT-2 beam search (img2text's, joint's: a host loop of token picks after the denoising, not a step of it) adds to
the call."""

from __future__ import annotations

from typing import Any

from diffusers import DPMSolverMultistepScheduler, UniDiffuserModel, UniDiffuserPipeline, UniDiffuserTextDecoder
from transformers import CLIPImageProcessor, CLIPVisionModelWithProjection

from .tiny import TEXT_WIDTH, clip_text, clip_tokenizer, clip_vision, gpt2_tokenizer, kl_vae, prompted, seeded

PREFIX_WIDTH = 16  # the text latent's width: the decoder's prefix encoder narrows the CLIP text encoder's 32 to it
TEXT_TOKENS = 77  # the CLIP text encoder's positions: the text latent's tokens
LATENT_SIZE = 16  # the VAE's latents of a 32-pixel image (two levels: 2x down)
TEXT_DECODER = {  # GPT-2 of width 32 and two layers over the tokenizer's 1000 ids; GPT-2's 1024 positions hold the
    # 77 prefix tokens and a generated caption
    "prefix_length": TEXT_TOKENS, "prefix_inner_dim": TEXT_WIDTH, "prefix_hidden_dim": PREFIX_WIDTH,
    "vocab_size": 1000, "n_embd": TEXT_WIDTH, "n_layer": 2, "n_head": 4,
}  # fmt: skip
UVIT = {  # a U-ViT of width 16 (2 heads of 8), two blocks, over 2x2 patches of the latents, the CLIP image embedding
    # and the text latent's tokens
    "text_dim": PREFIX_WIDTH, "clip_img_dim": TEXT_WIDTH, "num_text_tokens": TEXT_TOKENS, "num_attention_heads": 2,
    "attention_head_dim": 8, "in_channels": 4, "out_channels": 4, "num_layers": 2, "sample_size": LATENT_SIZE,
    "patch_size": 2,
}  # fmt: skip


class UniDiffuserStandIn:
    pipeline_class = UniDiffuserPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        vision = clip_vision()
        return {
            "vae": kl_vae(),
            "text_encoder": clip_text(),
            "image_encoder": seeded(lambda: CLIPVisionModelWithProjection(vision)),
            "clip_image_processor": CLIPImageProcessor(crop_size=32, size=32),
            "clip_tokenizer": clip_tokenizer(),
            "text_decoder": seeded(lambda: UniDiffuserTextDecoder(**TEXT_DECODER)),
            "text_tokenizer": gpt2_tokenizer(),
            "unet": seeded(lambda: UniDiffuserModel(**UVIT)),
            "scheduler": DPMSolverMultistepScheduler(
                beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", solver_order=3
            ),
        }

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return prompted(seed)  # a prompt and no image: text-to-image
