"""Stand-ins for text-encoder repositories: T5/UMT5, CLIP, BERT, RoBERTa, and Llama/Gemma/Qwen tokenizers.

Sizes follow what diffusers' dummy components build around them: the T5 and UMT5 width (`d_model`) is 32, the
`joint_attention_dim`/`text_dim`/`caption_channels` of the dummy transformers; CLIP text models of the tests have
1000 ids and 77 positions; the dummy Gemma2 text encoders of the Sana and Lumina tests have 8 ids, so the
`dummy-gemma` tokenizer has 8 tokens; the dummy Llama encoders of the HunyuanVideo tests have 1000 ids.
"""

from __future__ import annotations

import io
import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from diffusers.pipelines.kolors.text_encoder import ChatGLMConfig, ChatGLMModel
from tokenizers import AddedToken
from transformers import (
    AutoConfig,
    BertConfig,
    BertModel,
    CLIPConfig,
    CLIPImageProcessor,
    CLIPModel,
    LlamaConfig,
    LlamaForCausalLM,
    Qwen2Tokenizer,
    T5Config,
    T5ForConditionalGeneration,
    UMT5Config,
    UMT5EncoderModel,
)

from .seeded import save_seeded_model
from .tokenizer_builds import (
    bert_wordpiece,
    byte_level_bpe,
    clip_bpe,
    save_tokenizer,
    sentencepiece_bpe,
    t5_unigram,
    xlm_roberta_unigram,
)
from .words import ASCII_CHARACTERS, COMMON_WORDS

try:  # an optional dependency: without it the ChatGLM3 stand-in is left out (its `requires`)
    import sentencepiece as spm
except ImportError:
    spm = None

T5_WIDTH = 32
T5_VOCAB_SIZE = 1000  # above the tokenizer's ids, as 32128 is above the real T5 tokenizer's 32100
T5_SENTINELS = [f"<extra_id_{i}>" for i in range(100)]

CLIP_SPECIALS = {
    "bos_token": "<|startoftext|>",
    "eos_token": "<|endoftext|>",
    "unk_token": "<|endoftext|>",
    "pad_token": "<|endoftext|>",
}

# The layers of diffusers' tiny test models: 32 wide, 37 in the feed-forward, 2 layers of 4 heads.
TINY_LAYERS = {"hidden_size": 32, "intermediate_size": 37, "num_hidden_layers": 2, "num_attention_heads": 4}

# The tiny CLIP of diffusers' tests: its text model (1000 ids, 77 positions) and vision tower (30-pixel images).
CLIP_TEXT = {
    "vocab_size": 1000,
    **TINY_LAYERS,
    "max_position_embeddings": 77,
    "bos_token_id": 998,
    "eos_token_id": 999,
    "pad_token_id": 999,
}
CLIP_VISION = {**TINY_LAYERS, "image_size": 30, "patch_size": 2}

# RoBERTa's named tokens, which XLM-RoBERTa shares.
ROBERTA_SPECIALS = {
    "bos_token": "<s>",
    "eos_token": "</s>",
    "sep_token": "</s>",
    "cls_token": "<s>",
    "unk_token": "<unk>",
    "pad_token": "<pad>",
    "mask_token": "<mask>",
}

GPT2_END = "<|endoftext|>"
GPT2_VOCAB_SIZE = 1000

QWEN2_SPECIAL_IDS = {
    "<|endoftext|>": 151643,
    "<|im_start|>": 151644,
    "<|im_end|>": 151645,
    "<|object_ref_start|>": 151646,
    "<|object_ref_end|>": 151647,
    "<|box_start|>": 151648,
    "<|box_end|>": 151649,
    "<|quad_start|>": 151650,
    "<|quad_end|>": 151651,
    "<|vision_start|>": 151652,
    "<|vision_end|>": 151653,
    "<|vision_pad|>": 151654,
    "<|image_pad|>": 151655,
    "<|video_pad|>": 151656,
}

# ChatML as the Qwen chat templates render it, with image and video parts as vision placeholders.
QWEN_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' or 'image' in part %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'video' or 'video' in part %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in part %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

GEMMA_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "<start_of_turn>{{ 'model' if message['role'] == 'assistant' else message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] | trim }}"
    "{% else %}{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] | trim }}"
    "{% elif part['type'] == 'image' %}<start_of_image>{% endif %}{% endfor %}{% endif %}"
    "<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)

LLAMA_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n{{ message['content'] | trim }}<|eot_id|>"
    "{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)


def save_tokenizer_model_config(directory: Path, model_type: str, vocab_size: int) -> None:
    """The config.json of a tokenizer-only repository: transformers' AutoTokenizer reads the model type there."""
    config = AutoConfig.for_model(model_type, vocab_size=vocab_size, **TINY_LAYERS, num_key_value_heads=4)
    config.save_pretrained(str(directory))


def save_t5_tokenizer(directory: Path) -> None:
    save_tokenizer(
        t5_unigram(),
        directory,
        tokenizer_class="T5Tokenizer",
        special_tokens={"eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"},
        model_max_length=512,
        additional_special_tokens=T5_SENTINELS,
        extra_config={"extra_ids": 100},
    )


def t5_config(model_type: str = "t5"):
    """The tiny T5 (or UMT5) config of the t5 stand-ins: width T5_WIDTH, T5_VOCAB_SIZE ids, 2 layers."""
    config_class = UMT5Config if model_type == "umt5" else T5Config
    return config_class(
        vocab_size=T5_VOCAB_SIZE,
        d_model=T5_WIDTH,
        d_kv=8,
        d_ff=37,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        relative_attention_num_buckets=8,
        dropout_rate=0.1,
        feed_forward_proj="relu" if model_type == "t5" else "gated-gelu",
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )


def build_t5(directory: Path) -> None:
    """T5 config (d_model 32), a seeded T5ForConditionalGeneration (its encoder loads as T5EncoderModel), tokenizer."""
    save_seeded_model(lambda: T5ForConditionalGeneration(t5_config()), directory)
    save_t5_tokenizer(directory)


def build_umt5(directory: Path) -> None:
    save_seeded_model(lambda: UMT5EncoderModel(t5_config("umt5")), directory)
    save_t5_tokenizer(directory)


def save_clip_tokenizer(directory: Path) -> None:
    save_tokenizer(
        clip_bpe(), directory, tokenizer_class="CLIPTokenizer", special_tokens=CLIP_SPECIALS, model_max_length=77
    )


def build_clip(directory: Path) -> None:
    """A tiny CLIPModel (text width 32, 1000 ids, 77 positions), its tokenizer and image processor."""
    config = CLIPConfig(text_config=dict(CLIP_TEXT), vision_config=dict(CLIP_VISION), projection_dim=64)
    save_seeded_model(lambda: CLIPModel(config), directory)
    save_clip_tokenizer(directory)
    CLIPImageProcessor(crop_size={"height": 30, "width": 30}, size={"shortest_edge": 30}).save_pretrained(
        str(directory)
    )


def build_bert(directory: Path) -> None:
    """A tiny BertModel (width 32) and an uncased WordPiece tokenizer."""
    tok = bert_wordpiece()
    config = BertConfig(vocab_size=tok.get_vocab_size(), **TINY_LAYERS, max_position_embeddings=512)
    save_seeded_model(lambda: BertModel(config), directory)
    save_tokenizer(
        tok,
        directory,
        tokenizer_class="BertTokenizer",
        special_tokens={
            "unk_token": "[UNK]",
            "sep_token": "[SEP]",
            "pad_token": "[PAD]",
            "cls_token": "[CLS]",
            "mask_token": "[MASK]",
        },
        model_max_length=512,
        extra_config={"do_lower_case": True},
    )


def build_roberta_tokenizer(directory: Path) -> None:
    """RoBERTa's byte-level BPE, kept under 1000 ids (the dummy CLAP text model's vocabulary)."""
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    save_tokenizer(
        byte_level_bpe({}, style="roberta", specials_first=specials, vocab_size=1000),
        directory,
        tokenizer_class="RobertaTokenizer",
        special_tokens=ROBERTA_SPECIALS,
        model_max_length=512,
    )
    save_tokenizer_model_config(directory, "roberta", vocab_size=1000)


def save_gpt2_tokenizer(directory: Path) -> None:
    """GPT-2's byte-level BPE under 1000 ids, `<|endoftext|>` (its bos, eos and unk) the last, as 50256 is GPT-2's."""
    save_tokenizer(
        byte_level_bpe({GPT2_END: GPT2_VOCAB_SIZE - 1}, style="gpt2", vocab_size=GPT2_VOCAB_SIZE - 1),
        directory,
        tokenizer_class="GPT2Tokenizer",
        special_tokens={"bos_token": GPT2_END, "eos_token": GPT2_END, "unk_token": GPT2_END},
        model_max_length=1024,
    )


def save_qwen2_tokenizer(directory: Path, *, chat_template: str | None = QWEN_CHAT_TEMPLATE) -> None:
    """Qwen2's byte-level BPE with the special tokens at their real ids (151643…)."""
    extra = {"chat_template": chat_template} if chat_template else {}
    save_tokenizer(
        byte_level_bpe(QWEN2_SPECIAL_IDS, style="qwen2"),
        directory,
        tokenizer_class="Qwen2Tokenizer",
        special_tokens={"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "unk_token": None},
        model_max_length=32768,
        additional_special_tokens=[t for t in QWEN2_SPECIAL_IDS if t not in ("<|endoftext|>", "<|im_end|>")],
        extra_config={**extra, "errors": "replace"},
    )


def build_qwen3_embedding_tokenizer(directory: Path) -> None:
    save_qwen2_tokenizer(directory)
    save_tokenizer_model_config(directory, "qwen3", vocab_size=151936)


def save_gemma_tokenizer(directory: Path, *, vocab_size: int | None = None) -> None:
    """Gemma's SentencePiece-style BPE: `<pad>` 0, `<eos>` 1, `<bos>` 2, `<unk>` 3, `<mask>` 4, then pieces."""
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]
    if vocab_size is None:
        specials += ["<start_of_turn>", "<end_of_turn>", "<start_of_image>", "<end_of_image>"]
    save_tokenizer(
        sentencepiece_bpe(specials, style="gemma", vocab_size=vocab_size, bos="<bos>"),
        directory,
        tokenizer_class="GemmaTokenizer",
        special_tokens={
            "bos_token": "<bos>",
            "eos_token": "<eos>",
            "unk_token": "<unk>",
            "pad_token": "<pad>",
            "mask_token": "<mask>",
        },
        model_max_length=8192,
        additional_special_tokens=specials[5:],
        extra_config={"chat_template": GEMMA_CHAT_TEMPLATE, "add_bos_token": True, "add_eos_token": False},
    )


def build_dummy_gemma(directory: Path) -> None:
    """A Gemma tokenizer of 8 ids: the dummy Gemma2 text encoders of the tests have `vocab_size=8`."""
    save_gemma_tokenizer(directory, vocab_size=8)
    save_tokenizer_model_config(directory, "gemma", vocab_size=8)


def build_gemma_tokenizer(directory: Path) -> None:
    save_gemma_tokenizer(directory)
    save_tokenizer_model_config(directory, "gemma3_text", vocab_size=1000)


def loaded_tokenizer(save: Callable[[Path], None], load: Callable[..., Any], **kwargs: Any) -> Any:
    """A tokenizer `save` writes to a temporary directory, loaded from it with `load` (a class's from_pretrained)."""
    with tempfile.TemporaryDirectory(prefix="nosync-tokenizer-") as directory:
        save(Path(directory))
        return load(directory, **kwargs)


def qwen2_tokenizer() -> Qwen2Tokenizer:
    """Qwen2's byte-level BPE with its special tokens at their real ids (151643…) and a chat template, loaded."""
    return loaded_tokenizer(save_qwen2_tokenizer, Qwen2Tokenizer.from_pretrained)


def save_llama_tokenizer(directory: Path, *, vocab_size: int | None = 1000) -> None:
    """Llama's SentencePiece-style BPE: `<unk>` 0, `<s>` 1, `</s>` 2, then pieces (under 1000 ids by default)."""
    specials = ["<unk>", "<s>", "</s>"]
    save_tokenizer(
        sentencepiece_bpe(specials, style="llama", vocab_size=vocab_size, bos="<s>"),
        directory,
        tokenizer_class="LlamaTokenizer",
        special_tokens={"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<unk>"},
        model_max_length=2048,
        extra_config={"chat_template": LLAMA_CHAT_TEMPLATE, "add_bos_token": True, "add_eos_token": False},
    )


def build_llama_tokenizer_subfolder(directory: Path) -> None:
    """A repository whose tokenizer lives in `tokenizer/` (the HunyuanVideo tests load it with `subfolder=`)."""
    save_llama_tokenizer(directory / "tokenizer")
    save_tokenizer_model_config(directory / "tokenizer", "llama", vocab_size=1000)


def build_llama_tokenizer(directory: Path) -> None:
    save_llama_tokenizer(directory)
    save_tokenizer_model_config(directory, "llama", vocab_size=1000)


def build_llama_causal_lm(directory: Path) -> None:
    """A LlamaForCausalLM of width 16 and 2 layers (HiDream's `caption_channels=[32, 16]`, `llama_layers=(0, 1)`)."""
    config = LlamaConfig(
        vocab_size=1000,
        hidden_size=16,
        intermediate_size=37,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=2048,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    save_seeded_model(lambda: LlamaForCausalLM(config), directory)
    save_llama_tokenizer(directory)


def build_mclip_tokenizer(directory: Path) -> None:
    """XLM-RoBERTa tokenizer under 1005 ids (the Kandinsky tests' MultilingualCLIP vocabulary)."""
    save_tokenizer(
        xlm_roberta_unigram(),
        directory,
        tokenizer_class="XLMRobertaTokenizer",
        special_tokens=ROBERTA_SPECIALS,
        model_max_length=512,
    )
    save_tokenizer_model_config(directory, "xlm-roberta", vocab_size=1005)


MISTRAL_CONTROL_TOKENS = [
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[IMG]",
    "[IMG_BREAK]",
    "[IMG_END]",
]

# Mistral's instruction format, for messages whose content is a string or a list of text and image parts.
MISTRAL_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['content'] is string %}{% set text = message['content'] %}"
    "{% else %}{% set text = namespace(value='') %}{% for part in message['content'] %}"
    "{% if part['type'] == 'text' %}{% set text.value = text.value + part['text'] %}"
    "{% elif part['type'] == 'image' %}{% set text.value = text.value + '[IMG]' %}{% endif %}{% endfor %}"
    "{% set text = text.value %}{% endif %}"
    "{% if message['role'] == 'system' %}[SYSTEM_PROMPT]{{ text }}[/SYSTEM_PROMPT]"
    "{% elif message['role'] == 'user' %}[INST]{{ text }}[/INST]"
    "{% else %}{{ text }}{{ eos_token }}{% endif %}{% endfor %}"
)


def save_mistral_tokenizer(directory: Path) -> None:
    """A SentencePiece-style BPE, Mistral's control tokens first, under the 32000 ids of the Flux.2 dummy encoder."""
    save_tokenizer(
        sentencepiece_bpe(MISTRAL_CONTROL_TOKENS, style="llama", bos="<s>"),
        directory,
        tokenizer_class="LlamaTokenizer",
        special_tokens={"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<unk>"},
        model_max_length=131072,
        additional_special_tokens=MISTRAL_CONTROL_TOKENS[3:],
        extra_config={"chat_template": MISTRAL_CHAT_TEMPLATE, "add_bos_token": False, "add_eos_token": False},
    )
    save_tokenizer_model_config(directory, "mistral", vocab_size=32000)


def build_cosmos3_text_tokenizer(directory: Path) -> None:
    """A repository whose Qwen2 tokenizer lives in `text_tokenizer/` (the Cosmos 3 tests load it with `subfolder=`)."""
    save_qwen2_tokenizer(directory / "text_tokenizer")
    save_tokenizer_model_config(directory / "text_tokenizer", "qwen2", vocab_size=151657)


GLM4_SPECIAL_IDS = {
    token: 151329 + i
    for i, token in enumerate(
        [
            "<|endoftext|>",
            "[MASK]",
            "[gMASK]",
            "[sMASK]",
            "<sop>",
            "<eop>",
            "<|system|>",
            "<|user|>",
            "<|assistant|>",
            "<|observation|>",
            "<|begin_of_image|>",
            "<|end_of_image|>",
            "<|begin_of_video|>",
            "<|end_of_video|>",
        ]
    )
}


GLM4_NAMED_TOKENS = {"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"}


def save_glm4_tokenizer(
    directory: Path,
    *,
    special_ids: Mapping[str, int] = GLM4_SPECIAL_IDS,
    leading_tokens: Sequence[str] = (),
    named_tokens: Mapping[str, str] = GLM4_NAMED_TOKENS,
    extra_config: Mapping[str, object] | None = None,
) -> None:
    """GLM-4's byte-level BPE as a plain fast tokenizer, with `special_ids` at their real ids.

    `leading_tokens` take the ids below the text vocabulary (GLM-Image puts its vision tokens there and shifts the
    text ids up); those of them that `named_tokens` names become special added tokens, so text spelling them (as
    GLM-Image's processor appends its bos token) encodes to their ids.
    """
    tok = byte_level_bpe(special_ids, style="qwen2", specials_first=leading_tokens)
    named_leading = set(named_tokens.values()).intersection(leading_tokens)
    tok.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in sorted(named_leading)])
    save_tokenizer(
        tok,
        directory,
        tokenizer_class="PreTrainedTokenizerFast",
        special_tokens=named_tokens,
        model_max_length=128000,
        additional_special_tokens=[t for t in special_ids if t != "<|endoftext|>"],
        extra_config=extra_config,
    )


def build_glm4_tokenizer(directory: Path) -> None:
    """GLM-4's byte-level BPE with its special tokens at their real ids (151329…), under GlmConfig's 151552 ids.

    The real repository loads its tokenizer from remote code; this one is a plain fast tokenizer, which
    `AutoTokenizer.from_pretrained(..., trust_remote_code=True)` loads as well.
    """
    save_glm4_tokenizer(directory)
    save_tokenizer_model_config(directory, "glm", vocab_size=151552)


def build_chatglm3(directory: Path) -> None:
    """ChatGLM3 as Kolors loads it: diffusers' ChatGLMModel of width 8 (the Kolors tests' `cross_attention_dim=8`)
    and diffusers' ChatGLMTokenizer, which reads a SentencePiece model file: trained here, in memory, on the
    vocabulary of `words` (it needs the `sentencepiece` package, as ChatGLMTokenizer does)."""
    lines = [" ".join(COMMON_WORDS[i : i + 8]) for i in range(0, len(COMMON_WORDS), 8)] + [" ".join(ASCII_CHARACTERS)]
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines * 4),
        model_writer=model,
        vocab_size=400,
        model_type="bpe",
        character_coverage=1.0,
        unk_id=0,
        bos_id=1,
        eos_id=2,
        pad_id=-1,
        hard_vocab_limit=False,
        num_threads=1,
        minloglevel=2,
    )
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tokenizer.model").write_bytes(model.getvalue())
    tokenizer_config = {
        "tokenizer_class": "ChatGLMTokenizer",
        "padding_side": "left",
        "remove_space": False,
        "do_lower_case": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 8192,
    }
    (directory / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2) + "\n")
    config = ChatGLMConfig(
        num_layers=2,
        padded_vocab_size=512,  # above the 400 pieces and the 9 special tokens ChatGLMTokenizer appends
        hidden_size=8,
        ffn_hidden_size=16,
        kv_channels=4,
        num_attention_heads=2,
        seq_length=1024,
        multi_query_attention=True,
        multi_query_group_num=1,
        original_rope=True,  # ChatGLM3's config sets it; the model reads it
        torch_dtype="float32",
    )
    save_seeded_model(lambda: _initialized(ChatGLMModel(config)), directory)


def _initialized(model):
    """Fill every parameter from the (seeded) global generator: ChatGLM skips initializing its embedding and layers,
    which would leave whatever memory held, different in every build."""
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() == 1:
                parameter.fill_(1.0)  # norm scales (the model has no biases)
            else:
                parameter.normal_(0.0, 0.02)
    return model
