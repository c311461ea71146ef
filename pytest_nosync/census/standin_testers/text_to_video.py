"""Text-to-video with a 3-D UNet (deprecated): the text-to-video class's stand-in tester, and the video-to-video
one's (its video of frames, channels last but one, as its video processor takes a tensor)."""

from __future__ import annotations

from typing import Any

import torch
from diffusers import TextToVideoSDPipeline, UNet3DConditionModel, VideoToVideoSDPipeline

from .tiny import TEXT_WIDTH, VIDEO_UNET, clip_text, clip_tokenizer, ddim, kl_vae, prompted, seeded


class TextToVideoSDStandIn:
    pipeline_class = TextToVideoSDPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        config = {**VIDEO_UNET, "block_out_channels": (8, 8), "cross_attention_dim": TEXT_WIDTH}
        unet = seeded(lambda: UNet3DConditionModel(**config))
        return {
            "unet": unet,
            "scheduler": ddim(),
            "vae": kl_vae((8,), sample_size=32, norm_num_groups=2),
            "text_encoder": clip_text(hidden_act="gelu", projection_dim=TEXT_WIDTH),
            "tokenizer": clip_tokenizer(),
        }

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        return prompted(seed, num_frames=2, output_type="pt")


class VideoToVideoSDStandIn(TextToVideoSDStandIn):
    pipeline_class = VideoToVideoSDPipeline

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        inputs = super().get_dummy_inputs(device, seed)
        del inputs["num_frames"]  # the video's
        video = torch.rand((1, 2, 3, 32, 32), generator=torch.Generator("cpu").manual_seed(seed))
        return {**inputs, "video": video}
