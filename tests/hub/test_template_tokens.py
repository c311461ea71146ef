"""The Qwen2 stand-in counts a pipeline's instruction template as the real tokenizer does.

QwenImage cuts its template off the text encoder's output by a token count measured with the real Qwen2 tokenizer
(`prompt_template_encode_start_idx`), and Kandinsky 5's image-to-image pipeline truncates its text by that count: a
stand-in that spelled the template's words in bytes (73 tokens for QwenImage's 34) made the second cut its image
tokens off ("0 image tokens and 1 images").
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from pytest_nosync.census.hub_standins import hub_standins

QWEN2_VL = "hf-internal-testing/tiny-random-Qwen2VLForConditionalGeneration"


def _template(pipeline: type) -> tuple[str, int]:
    """(the part of the pipeline's template before the prompt, the token count the pipeline cuts off)."""
    source = inspect.getsource(pipeline.__init__)
    literal = re.search(r'self\.prompt_template_encode = ("(?:[^"\\]|\\.)*")', source)
    start = re.search(r"self\.prompt_template_encode_start_idx = (\d+)", source)
    assert literal and start, f"{pipeline.__name__} no longer sets its template as this test reads it"
    return ast.literal_eval(literal.group(1)).split("{}")[0], int(start.group(1))


@pytest.fixture
def qwen2_tokenizer(standin_root: Path, empty_offline_hub: Path):
    from transformers import AutoTokenizer

    with hub_standins(standin_root, offline=True):
        return AutoTokenizer.from_pretrained(QWEN2_VL)


def test_qwenimages_template_is_as_many_tokens_as_the_pipeline_cuts_off(qwen2_tokenizer) -> None:
    from diffusers import QwenImagePipeline

    prefix, start = _template(QwenImagePipeline)
    assert len(qwen2_tokenizer(prefix).input_ids) == start


def test_template_words_are_whole_tokens_and_text_round_trips(qwen2_tokenizer) -> None:
    text = "<|im_start|>system\nYou are a promt engineer. Based on the provided source image (first image), create:"
    tokens = qwen2_tokenizer.tokenize(text)
    assert tokens[:9] == ["<|im_start|>", "system", "Ċ", "You", "Ġare", "Ġa", "Ġprom", "t", "Ġengineer"], tokens
    assert qwen2_tokenizer.decode(qwen2_tokenizer(text).input_ids) == text
