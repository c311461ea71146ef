"""census.diffusers_bugs: a raise of an untested class's plain call is called diffusers' own bug only where its file
and message are a verified one's; the same message elsewhere, or another raise of that file, is not."""

from __future__ import annotations

import pytest
from diffusers.utils import deprecate

from pytest_nosync.census import untested
from pytest_nosync.census.diffusers_bugs import own_bug


def test_diffusers_deprecate_with_a_past_removal_version_raises_and_is_called_diffusers_own_bug() -> None:
    with pytest.raises(ValueError) as raised:
        deprecate("SomePipeline", "0.1.0", "renamed")  # as Lumina's __init__ does with "0.34"
    site = untested._raise_site(raised.value)
    assert site.startswith("diffusers/utils/deprecation_utils.py:"), site
    assert own_bug(raised.value, site).startswith("diffusers' own bug: its __init__ calls deprecate()")


def test_the_same_message_elsewhere_or_another_raise_of_that_file_is_not_called_diffusers_own() -> None:
    message = "EasyAnimateControlPipeline.encode_prompt() got an unexpected keyword argument 'text_encoder_index'"
    at = "diffusers/pipelines/easyanimate/pipeline_easyanimate_control.py:807"
    assert own_bug(TypeError(message), at).startswith("diffusers' own bug")
    assert own_bug(TypeError(message), "tests/twins/untested_pipelines.py:12") == ""
    assert own_bug(ValueError("mask_image must be given"), at) == ""


def test_chroma_inpaints_missing_config_field_is_diffusers_own_only_at_its_line() -> None:
    exc = AttributeError("'FrozenDict' object has no attribute 'guidance_embeds'")
    assert own_bug(exc, "diffusers/pipelines/chroma/pipeline_chroma_inpainting.py:1060").startswith("diffusers'")
    assert own_bug(exc, "diffusers/pipelines/flux/pipeline_flux.py:900") == ""
