"""Raises of an untested class's plain call that are diffusers' own bugs, each verified by reading diffusers' code at
the line (docs/census.md lists them with their file:line): matched by the raising file and the message, never by
pipeline class, so that a raise the census's guessed inputs make is never called diffusers' own."""

from __future__ import annotations

from typing import NamedTuple


class OwnBug(NamedTuple):
    """A raise diffusers makes whatever inputs it is given: where (the file it is raised in, as `site` names it),
    what its message holds, and why it is diffusers' bug."""

    file: str
    message: str
    why: str


VERIFIED = (
    OwnBug(
        "diffusers/utils/deprecation_utils.py",
        "should be removed since diffusers' version",
        "its __init__ calls deprecate() with a removal version diffusers' own version has passed",
    ),
    OwnBug(
        "pipeline_chroma_inpainting.py",
        "object has no attribute 'guidance_embeds'",
        "it reads transformer.config.guidance_embeds, which the ChromaTransformer2DModel its __init__ names has not",
    ),
    OwnBug(
        "diffusers/models/unets/unet_2d_blocks.py",
        "DualTransformer2DModel.forward() got an unexpected keyword argument 'encoder_attention_mask'",
        "its dual-guided UNet holds DualTransformer2DModels, whose forward takes no encoder_attention_mask, which the "
        "UNet's cross-attention blocks pass",
    ),
    OwnBug(
        "blip_diffusion/modeling_blip2.py",
        "object has no attribute 'invert_attention_mask'",
        "its Q-Former calls self.invert_attention_mask(), which transformers 5's models no longer have",
    ),
    OwnBug(
        "pipeline_easyanimate_control.py",
        "unexpected keyword argument 'text_encoder_index'",
        "its __call__ passes encode_prompt() an argument encode_prompt does not take",
    ),
    OwnBug(
        "pipeline_easyanimate_inpaint.py",
        "tensor() takes 1 positional argument but 2 were given",
        "its loop calls torch.tensor([noise_timestep], noise) where a transformer takes the latents' channels",
    ),
    OwnBug(
        "diffusion_gemma/pipeline_diffusion_gemma.py",
        "create_diffusion_decoder_attention_mask() got an unexpected keyword argument 'past_key_values'",
        "it passes the decoder's mask builder past_key_values=, which transformers 5.24's DiffusionGemma decoder names "
        "cache",
    ),
)


def own_bug(exc: BaseException, site: str) -> str:
    """ "diffusers' own bug: <why>" where `exc`, raised at `site` (file:line), is a verified one, else ""."""
    file = site.rsplit(":", 1)[0]
    for bug in VERIFIED:
        if file.endswith(bug.file) and bug.message in str(exc):
            return f"diffusers' own bug: {bug.why}"
    return ""
