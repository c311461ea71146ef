"""Stand-ins for the hub repositories diffusers' Modular Diffusers testers load (`pretrained_model_name_or_path`).

A modular tester builds its pipeline with `blocks.init_pipeline(repo)` and `load_components()`: the repository's
`modular_model_index.json` names each component's own repository and subfolder. The stand-in skips that file: it is
the components themselves, a function returning them by name, which the census gives the pipeline the blocks made
(`update_components`). A family's tiny modular repository holds the same tiny models as its classic tester's dummy
components, so a stand-in is that tester's `get_dummy_components()` (FROM_CLASSIC_TESTERS: repository id -> (its test
module, its tester class)); where those components need an adaptation, a named function does it (MODULAR_STANDINS),
as do the families no classic tester has, their components built in code (modular_builds), and the repository a
class no config names is released in where no sibling config's components fit it (RELEASED_IN); a repository whose
classic tester's components hold a processor transformers builds only with torchvision is stood in for where
torchvision is importable (WITH_TORCHVISION), and where no stand-in can fit the blocks, MISFITS says why. A
repository with no stand-in is not checked, with that reason, never passed. What each stands in with, measured:
docs/census.md, "Modular Diffusers".
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

from .classic_components import NoStandIn
from .classic_components import classic_components as _classic_components

Components = Callable[[], dict[str, Any]]

# repository id -> (the classic tester's module, its class), importable in a diffusers checkout's test run
FROM_CLASSIC_TESTERS = {
    "hf-internal-testing/tiny-flux-modular": ("tests.pipelines.flux.test_pipeline_flux", "FluxPipelineTesterConfig"),
    "hf-internal-testing/tiny-flux-kontext-pipe": (
        "tests.pipelines.flux.test_pipeline_flux_kontext",
        "FluxKontextPipelineFastTests",
    ),
    "hf-internal-testing/tiny-flux2-klein-modular": (
        "tests.pipelines.flux2.test_pipeline_flux2_klein",
        "Flux2KleinPipelineTesterConfig",
    ),
    "AlanPonnachan/tiny-sd3-modular": (
        "tests.pipelines.stable_diffusion_3.test_pipeline_stable_diffusion_3",
        "StableDiffusion3PipelineFastTests",
    ),
    "hf-internal-testing/tiny-sdxl-modular": (
        "tests.pipelines.stable_diffusion_xl.test_stable_diffusion_xl",
        "StableDiffusionXLPipelineFastTests",
    ),
    "hf-internal-testing/tiny-qwenimage-modular": (
        "tests.pipelines.qwenimage.test_qwenimage",
        "QwenImagePipelineTesterConfig",
    ),
    "hf-internal-testing/tiny-wan-modular-pipe": ("tests.pipelines.wan.test_wan", "WanPipelineTesterConfig"),
    "akshan-main/tiny-ltx-modular-pipe": ("tests.pipelines.ltx.test_ltx", "LTXPipelineFastTests"),
    "hf-internal-testing/tiny-zimage-modular-pipe": ("tests.pipelines.z_image.test_z_image", "ZImagePipelineFastTests"),
    "hf-internal-testing/tiny-helios-modular-pipe": ("tests.pipelines.helios.test_helios", "HeliosPipelineFastTests"),
    "hf-internal-testing/tiny-cosmos3-modular-pipe": (
        "tests.pipelines.cosmos.test_cosmos3",
        "Cosmos3OmniPipelineFastTests",
    ),
    "hf-internal-testing/tiny-ltx2-modular-pipe": ("tests.pipelines.ltx2.test_ltx2", "LTX2PipelineFastTests"),
    "hf-internal-testing/tiny-flux2-klein-base-modular": (
        "tests.pipelines.flux2.test_pipeline_flux2_klein",
        "Flux2KleinPipelineTesterConfig",
    ),
}


def components_for(repo: str) -> Components:
    """The function building the components of `repo`'s stand-in; NoStandIn where it has none."""
    if repo in MISFITS:
        raise NoStandIn(MISFITS[repo])
    if repo in WITH_TORCHVISION:
        module, name, processor = WITH_TORCHVISION[repo]
        if not torchvision_importable():
            raise NoStandIn(WITHOUT_TORCHVISION.format(processor=processor))
        return lambda: _classic_components(module, name)
    if repo in MODULAR_STANDINS:
        return MODULAR_STANDINS[repo]
    if repo in FROM_CLASSIC_TESTERS:
        module, name = FROM_CLASSIC_TESTERS[repo]
        return lambda: _classic_components(module, name)
    raise NoStandIn(f"the hub repository {repo} has no stand-in (census.hub_standins.modular_repos)")


def torchvision_importable() -> bool:
    """Whether torchvision can be imported here (found, not imported: collection stays cheap)."""
    return importlib.util.find_spec("torchvision") is not None


def _hunyuan_video1_5_own_guider() -> dict[str, Any]:
    # the classic tester's guider has guidance_scale 1.0; the modular blocks make their own (from_config, 7.5), as
    # a load from the hub does, and their text encoder step needs the negative embeddings that guidance makes
    components = _classic_components(
        "tests.pipelines.hunyuan_video1_5.test_hunyuan_1_5", "HunyuanVideo15PipelineFastTests"
    )
    del components["guider"]
    return components


def _built(name: str) -> Components:
    def build() -> dict[str, Any]:
        # modular_builds imports diffusers' and transformers' models: only once a stand-in is built, never to collect
        from . import modular_builds

        return getattr(modular_builds, name)()

    return build


# repository id -> its components, for repositories a classic tester's components do not fit as they are
MODULAR_STANDINS: dict[str, Components] = {
    "akshan-main/tiny-hunyuanvideo1_5-modular-pipe": _hunyuan_video1_5_own_guider,
    "hf-internal-testing/tiny-cosmos3-distilled-modular-pipe": _built("cosmos3_distilled"),
    "hf-internal-testing/tiny-helios-pyramid-modular-pipe": _built("helios_pyramid"),
    "hf-internal-testing/tiny-ltx2-5-modular-pipe": _built("ltx25"),
    "hf-internal-testing/tiny-anima-modular-pipe": _built("anima"),
    "akshan-main/tiny-ernie-image-modular-pipe": _built("ernie_image"),
    "hf-internal-testing/tiny-wan-animate-2-modular": _built("wan_animate_2"),
    "hf-internal-testing/tiny-wan-animate-2-distilled-modular": _built("wan_animate_2"),
    "hf-internal-testing/tiny-krea2-modular-pipe": _built("krea2"),
    "hf-internal-testing/tiny-krea2-turbo-modular-pipe": _built("krea2"),
    "hf-internal-testing/tiny-minimax-music3-modular-pipe": _built("minimax_music3"),
    "hf-internal-testing/tiny-minimax-h3-modular-pipe": _built("minimax_h3"),
    "BestWishYsh/Helios-Distilled": _built("helios_pyramid_distilled"),
}

# ModularPipeline class name -> the repository it is released in, for a class no config names whose blocks need
# components none of its sibling configs' repositories has (the distilled Helios blocks step a DMD scheduler):
# census.modular_untested builds it from this repository's stand-in, with each sibling config's inputs in turn
RELEASED_IN: dict[str, str] = {
    "HeliosPyramidDistilledModularPipeline": "BestWishYsh/Helios-Distilled",
}

# repository id -> why no stand-in fits its blocks, here (no stand-in, with that reason)
MISFITS: dict[str, str] = {}

# repository id -> (the classic tester's module, its class, the processor among its components that transformers
# builds only with torchvision): stood in as that tester's components where torchvision is importable (the processor
# from its hub stand-in, census.hub_standins.vision_language_repos), else not, with WITHOUT_TORCHVISION's reason
WITH_TORCHVISION = {
    "hf-internal-testing/tiny-flux2-modular": (
        "tests.pipelines.flux2.test_pipeline_flux2",
        "Flux2PipelineTesterConfig",
        "PixtralProcessor (its tokenizer)",
    ),
    "hf-internal-testing/tiny-qwenimage-edit-modular": (
        "tests.pipelines.qwenimage.test_qwenimage_edit",
        "QwenImageEditPipelineTesterConfig",
        "Qwen2VLProcessor (for its Qwen2VLVideoProcessor)",
    ),
    "hf-internal-testing/tiny-qwenimage-edit-plus-modular": (
        "tests.pipelines.qwenimage.test_qwenimage_edit_plus",
        "QwenImageEditPlusPipelineTesterConfig",
        "Qwen2VLProcessor (for its Qwen2VLVideoProcessor)",
    ),
}
WITHOUT_TORCHVISION = (
    "its stand-in's {processor}, which the blocks call on every prompt, is built by transformers only with "
    "torchvision, which is not installed here"
)
