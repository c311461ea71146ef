"""Stand-in testers for the families diffusers exports and tests in no module (its deprecated pipelines): each a
tester as diffusers writes one (`pipeline_class`, `get_dummy_components`, `get_dummy_inputs`), written here with tiny
models of its own, that the census drives a family's classes through as it drives them through a sibling tester
(census.untested.plan). One module per family:

- amused: aMUSEd's masked-token transformer (its image-to-image and inpainting classes through it);
- dance_diffusion: Dance Diffusion's 1-D UNet;
- latent_diffusion: the unconditional and the super-resolution latent diffusion classes;
- text_to_video: the text-to-video 3-D UNet (its video-to-video class through it);
- vq_diffusion: VQ Diffusion's discrete transformer;
- wuerstchen: Würstchen's prior, decoder and combined classes;
- tiny: what they share (the width, seeded models, an offline CLIP tokenizer).
"""

from __future__ import annotations

import importlib

FAMILIES = ("amused", "dance_diffusion", "latent_diffusion", "text_to_video", "vq_diffusion", "wuerstchen")


def _testers() -> tuple[type, ...]:
    found = []
    for family in FAMILIES:
        try:
            module = importlib.import_module(f"{__name__}.{family}")
        except ImportError:  # the installed diffusers has not these classes: it exports none of them to check either
            continue
        found += [v for k, v in vars(module).items() if k.endswith("StandIn") and isinstance(v, type)]
    return tuple(found)


TESTERS: tuple[type, ...] = _testers()
