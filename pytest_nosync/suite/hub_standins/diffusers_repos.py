"""Stand-ins for diffusers model repositories, saved per subfolder as diffusers saves them."""

from __future__ import annotations

from pathlib import Path

from .seeded import save_seeded_model


def _tiny_unet2d(**extra):
    from diffusers import UNet2DModel

    return UNet2DModel(
        sample_size=32,
        in_channels=3,
        out_channels=3,
        layers_per_block=1,
        block_out_channels=(32, 64),
        norm_num_groups=8,
        down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        **extra,
    )


def build_consistency_models_test(directory: Path) -> None:
    """Two 32x32 RGB UNet2DModels, `test_unet` and the class-conditional `test_unet_class_cond` (10 classes)."""
    save_seeded_model(_tiny_unet2d, directory / "test_unet")
    save_seeded_model(lambda: _tiny_unet2d(num_class_embeds=10), directory / "test_unet_class_cond")
