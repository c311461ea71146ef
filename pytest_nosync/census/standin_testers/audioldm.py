"""AudioLDM and MusicLDM (deprecated): a UNet over a mel spectrogram's latents, conditioned on a CLAP text embedding,
and a HiFi-GAN vocoder; MusicLDM's text encoder is a whole CLAP model (its call asks it for text features), its
feature extractor none (it scores several waveforms with one)."""

from __future__ import annotations

from typing import Any

import torch
from diffusers import AudioLDMPipeline, MusicLDMPipeline, UNet2DConditionModel
from transformers import (
    ClapAudioConfig,
    ClapConfig,
    ClapModel,
    ClapTextConfig,
    ClapTextModelWithProjection,
    SpeechT5HifiGan,
    SpeechT5HifiGanConfig,
)

from .tiny import WIDTH, ddim, kl_vae, prompted, roberta_tokenizer, seeded, text_layers


def _clap_text() -> ClapTextConfig:
    return ClapTextConfig(**text_layers(WIDTH, heads=1, layers=1, projection_dim=WIDTH))


class AudioLDMStandIn:
    pipeline_class = AudioLDMPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        unet = seeded(
            lambda: UNet2DConditionModel(
                block_out_channels=(8, 16),
                layers_per_block=1,
                norm_num_groups=8,
                sample_size=32,
                in_channels=4,
                out_channels=4,
                down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
                cross_attention_dim=(8, 16),
                class_embed_type="simple_projection",  # the CLAP embedding enters as the class embedding
                projection_class_embeddings_input_dim=WIDTH,
                class_embeddings_concat=True,
            )
        )
        text_encoder = seeded(lambda: ClapTextModelWithProjection(_clap_text()))
        vocoder = seeded(
            lambda: SpeechT5HifiGan(
                SpeechT5HifiGanConfig(
                    model_in_dim=8,  # the VAE's mel bins
                    sampling_rate=16000,
                    upsample_initial_channel=16,
                    upsample_rates=[2, 2],
                    upsample_kernel_sizes=[4, 4],
                    resblock_kernel_sizes=[3, 7],
                    resblock_dilation_sizes=[[1, 3, 5], [1, 3, 5]],
                    normalize_before=False,
                )
            )
        )
        return {
            "unet": unet,
            "scheduler": ddim(),
            "vae": kl_vae((8, 16), channels=1, norm_num_groups=8),  # a mel spectrogram's one channel
            "text_encoder": text_encoder,
            "tokenizer": roberta_tokenizer(),
            "vocoder": vocoder,
        }

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        inputs = prompted(seed, prompt="A hammer hitting a wooden surface")
        del inputs["output_type"]  # its default, the waveform as a NumPy array
        return inputs


class MusicLDMStandIn(AudioLDMStandIn):
    pipeline_class = MusicLDMPipeline

    def get_dummy_components(self) -> dict[str, Any]:
        audio = ClapAudioConfig(
            spec_size=64,
            window_size=4,
            num_mel_bins=64,
            depths=[1, 1],
            num_attention_heads=[1, 1],
            patch_embeds_hidden_size=8,
            hidden_size=16,
            projection_dim=WIDTH,
            num_hidden_layers=2,
            enable_fusion=False,
            patch_stride=(4, 4),
            num_classes=2,
            intermediate_size=16,
        )
        config = ClapConfig(text_config=_clap_text().to_dict(), audio_config=audio.to_dict(), projection_dim=WIDTH)
        clap = seeded(lambda: ClapModel(config))
        return {**super().get_dummy_components(), "text_encoder": clap, "feature_extractor": None}

    def get_dummy_inputs(self, device: Any, seed: int = 0) -> dict[str, Any]:
        # Its prompt encoding takes `get_text_features()` for a tensor, which transformers 5 returns inside an output
        # object: diffusers' bug there, outside the loop checked here; the embeddings are given instead.
        inputs = super().get_dummy_inputs(device, seed)
        del inputs["prompt"]
        embeddings = torch.randn((2, WIDTH), generator=torch.Generator("cpu").manual_seed(seed))
        return {**inputs, "prompt_embeds": embeddings[:1], "negative_prompt_embeds": embeddings[1:]}
