"""Stand-in testers for the classes diffusers exports and tests in no module (its deprecated pipelines, a few
more): each a tester as diffusers writes one (`pipeline_class`, `get_dummy_components`, `get_dummy_inputs`), written
here with tiny models of its own, that the census drives a family's classes through as it drives them through a
sibling tester (census.untested.plan). One module per family:

- amused: aMUSEd's masked-token transformer (its image-to-image and inpainting classes through it);
- audioldm: AudioLDM's and MusicLDM's spectrogram UNet, CLAP text encoder and vocoder;
- blip_diffusion: BLIP Diffusion's Q-Former and context text encoder before Stable Diffusion, and with a ControlNet;
- dance_diffusion: Dance Diffusion's 1-D UNet;
- diffusion_gemma: DiffusionGemma's block diffusion of text, a tiny DiffusionGemmaForBlockDiffusion its model;
- ernie_image: the classic Ernie Image pipeline (diffusers tests its modular blocks only);
- flux_redux: Flux Redux's prior, a SigLIP tower and a Redux image encoder (its one test loads the released repo);
- gligen: GLIGEN's box-grounded Stable Diffusion, by phrase and by phrase and image;
- i2vgen_xl: I2VGen-XL's image-to-video UNet;
- ideogram4: Ideogram 4's conditional and unconditional transformers over a tapped Qwen3-VL text model;
- latent_diffusion: the unconditional and the super-resolution latent diffusion classes;
- llada2: LLaDA2's block refinement of tokens, a tiny Llama its model;
- longcat_image: LongCat-Image's text-to-image and edit classes, a Qwen2.5-VL text encoder before a Flux-like
  transformer;
- pndm: PNDM's unconditional UNet and multi-step scheduler;
- stable_diffusion_upscale: the x4 upscaler's 7-channel UNet;
- stable_diffusion_variants: LDM3D, Paradigms, Paint by Example, Pix2Pix-Zero: no sibling's components or inputs fit;
- text_to_video: the text-to-video and video-to-video 3-D UNet;
- unclip: unCLIP's prior, decoder and super-resolution UNets, text-to-image and image variation;
- unidiffuser: UniDiffuser's U-ViT over image and text latents, a GPT-2 text decoder, driven text-to-image;
- versatile_diffusion: Versatile Diffusion's image and flat text UNets, text-to-image, image variation, dual-guided;
- vq_diffusion: VQ Diffusion's discrete transformer;
- wuerstchen: Würstchen's prior, decoder and combined classes;
- tiny: what they share (the width, seeded models, offline CLIP, GPT-2 and other tokenizers).
"""

from __future__ import annotations

import importlib

FAMILIES = (
    "amused",
    "audioldm",
    "blip_diffusion",
    "dance_diffusion",
    "diffusion_gemma",
    "ernie_image",
    "flux_redux",
    "gligen",
    "i2vgen_xl",
    "ideogram4",
    "latent_diffusion",
    "llada2",
    "longcat_image",
    "pndm",
    "stable_diffusion_upscale",
    "stable_diffusion_variants",
    "text_to_video",
    "unclip",
    "unidiffuser",
    "versatile_diffusion",
    "vq_diffusion",
    "wuerstchen",
)


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
