"""The scenario registry (pytest_nosync.scenarios): names, parameters and their ranges, `all`, and what a bad
selection says; every scenario turned on by a function of suite.scenarios."""

from __future__ import annotations

import inspect

import pytest

from pytest_nosync import scenarios
from pytest_nosync.scenarios import PLAIN, SCENARIOS, UnknownScenario, parse
from pytest_nosync.suite import scenarios as features

BUILT_IN = (
    "first_block_cache", "pyramid_attention_broadcast", "faster_cache", "taylorseer_cache", "mag_cache",
    "text_kv_cache", "sea_cache", "model_cpu_offload", "sequential_cpu_offload", "components_auto_offload",
    "group_offload_block", "group_offload_leaf_stream",
    "layerwise_casting", "regional_compile", "lora", "attention_backend_native", "attention_backend_cudnn",
    "attention_backend_efficient", "attention_backend_flash", "attention_backend_sage", "attention_backend_xformers",
    "attention_backend_flex",
)  # fmt: skip


def test_the_registry_holds_plain_and_every_built_in_scenario_each_with_its_feature() -> None:
    assert list(SCENARIOS) == [PLAIN, *BUILT_IN]
    assert all(inspect.isfunction(features.feature_of(s)) for s in SCENARIOS.values())
    cache = [s for s in SCENARIOS.values() if s.feature == "cache"]
    assert cache and all(inspect.isfunction(getattr(features, s.config)) for s in cache)
    # a cache hook whose denoiser needs a model adapter (SeaCache) is turned on by `cache` too, then checked for one
    assert {s.feature for s in SCENARIOS.values() if s.config} == {"cache", "adapted_cache"}
    assert all(s.config for s in SCENARIOS.values() if s.feature in ("cache", "adapted_cache"))


def test_a_selection_reads_names_settings_and_all() -> None:
    assert [s.name for s in parse("plain,first_block_cache")] == ["plain", "first_block_cache"]
    assert parse("all") == tuple(SCENARIOS.values())
    (fbc,) = parse("first_block_cache:threshold=0.3")
    assert fbc.value("threshold") == 0.3 and SCENARIOS["first_block_cache"].value("threshold") == 0.2
    (group,) = parse(["group_offload_block:num_blocks_per_group=2"])
    assert group.settings() == {"num_blocks_per_group": 2}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("first_blok_cache", "unknown scenario 'first_blok_cache'; known: all, plain, first_block_cache"),
        ("first_block_cache:threshold=-1", "first_block_cache:threshold must be in [0.0, 10.0], got '-1'"),
        ("first_block_cache:threshold=high", "first_block_cache:threshold must be a float, got 'high'"),
        ("first_block_cache:skip=2", "scenario first_block_cache has no parameter 'skip' (its parameters: threshold)"),
        ("lora:rank", "lora:rank: a parameter is key=value, got 'rank'"),
        ("layerwise_casting:storage_dtype=int8", "layerwise_casting:storage_dtype must be one of float8_e4m3fn"),
        ("", "needs at least one scenario name, or all"),
        # each once: the ids name a scenario, not its settings, and a second one replaced the first (0.1 never ran)
        (
            "first_block_cache:threshold=0.1,first_block_cache:threshold=0.3",
            "scenario first_block_cache is named twice",
        ),
        ("all,plain", "all is every scenario: name it alone"),
        ("regional_compile:fullgraph=ture", "regional_compile:fullgraph must be true or false, got 'ture'"),
        ("first_block_cache:threshold=nan", "first_block_cache:threshold must be a number, got 'nan'"),
        (["lora", 3], "a scenario is named by a string, got 3"),  # a marker's list
        # diffusers' ComponentsManager refuses it only when the offloading is turned on, on a GPU: an `error` finding
        (
            "components_auto_offload:memory_reserve_margin=3",
            "components_auto_offload:memory_reserve_margin must be a size with its unit, as diffusers reads it (3GB, "
            "512MiB), got '3'",
        ),
    ],
)
def test_a_bad_selection_is_one_sentence(text: str, message: str) -> None:
    with pytest.raises(UnknownScenario) as raised:
        parse(text)
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)


def test_a_bool_reads_the_words_of_either_value_and_a_choice_in_any_case() -> None:
    """`on` is true (it was read as False: only 1, true and yes were true, any other word false)."""
    for word, value in (("on", True), ("Yes", True), ("1", True), ("off", False), ("no", False), ("FALSE", False)):
        (compiled,) = parse(f"regional_compile:fullgraph={word}")
        assert compiled.value("fullgraph") is value, word
    (faster,) = parse("faster_cache:is_guidance_distilled=True")
    assert faster.value("is_guidance_distilled") == "true"


def test_a_memory_size_is_read_as_diffusers_reads_it() -> None:
    for size in ("3GB", "512MiB", "1.5gb"):
        (offload,) = parse(f"components_auto_offload:memory_reserve_margin={size}")
        assert offload.value("memory_reserve_margin") == size


def test_settings_keep_the_registry_unchanged() -> None:
    parse("mag_cache:threshold=0.9")
    assert scenarios.SCENARIOS["mag_cache"].values == {}
