"""Tokenizers built in code with the `tokenizers` library, one function per family, and how they are saved.

Each family mirrors the pipeline of the real tokenizer it stands in for (CLIP's byte-level BPE with `</w>`, T5's
SentencePiece Unigram with `▁`, Llama's and Gemma's SentencePiece-style BPE with byte fallback, Qwen2's byte-level
BPE, BERT's WordPiece), because transformers rebuilds a model-specific tokenizer from the vocabulary of
`tokenizer.json` with its own normalizer and pre-tokenizer: a mismatched pipeline would tokenize differently once
loaded. Vocabularies are small and deterministic: special tokens, single characters, and `words.COMMON_WORDS`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

from .words import ASCII_CHARACTERS, COMMON_WORDS, TEMPLATE_PUNCTUATION, TEMPLATE_WORDS

SPIECE_SPACE = "▁"


def _bytes_to_unicode() -> dict[int, str]:
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    printable += list(range(ord("®"), ord("ÿ") + 1))
    codes = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            codes.append(256 + extra)
            extra += 1
    return dict(zip(printable, (chr(c) for c in codes), strict=True))


_UNICODE_OF_BYTE = _bytes_to_unicode()


def _byte_alphabet() -> list[str]:
    """The 256 printable stand-ins for bytes that byte-level BPE uses, in byte order."""
    return [_UNICODE_OF_BYTE[b] for b in range(256)]


def _add_merged_word(vocab: dict[str, int], merges: list[tuple[str, str]], symbols: Sequence[str], limit: int) -> None:
    """Merge `symbols` left to right into one token, adding each intermediate token while the vocabulary has room."""
    current = symbols[0]
    for symbol in symbols[1:]:
        merged = current + symbol
        if merged not in vocab:
            if len(vocab) >= limit:
                return
            vocab[merged] = len(vocab)
            merges.append((current, symbol))
        current = merged


def clip_bpe(*, vocab_size: int = 1000) -> Tokenizer:
    """CLIP's byte-level BPE with an end-of-word suffix; `<|startoftext|>`/`<|endoftext|>` take the last two ids.

    CLIPTextModel pools at the highest id of the sequence when its config keeps the legacy eos id (2), as the
    dummy text encoders of the pipeline tests do: the end token must be the largest id, as in the real vocabulary.
    """
    alphabet = _byte_alphabet()
    vocab = {ch: i for i, ch in enumerate(alphabet)}
    for ch in alphabet:
        vocab[ch + "</w>"] = len(vocab)
    merges: list[tuple[str, str]] = []
    for word in COMMON_WORDS:
        symbols = [*word[:-1], word[-1] + "</w>"]
        _add_merged_word(vocab, merges, symbols, limit=vocab_size - 2)
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    tok = Tokenizer(
        models.BPE(
            vocab=vocab,
            merges=merges,
            continuing_subword_prefix="",
            end_of_word_suffix="</w>",
            fuse_unk=False,
            unk_token="<|endoftext|>",
        )
    )
    tok.normalizer = normalizers.Sequence(
        [normalizers.NFC(), normalizers.Replace(Regex(r"\s+"), " "), normalizers.Lowercase()]
    )
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(
                Regex(
                    r"""<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"""
                ),
                behavior="removed",
                invert=True,
            ),
            pre_tokenizers.ByteLevel(add_prefix_space=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.RobertaProcessing(
        ("<|endoftext|>", vocab["<|endoftext|>"]),
        ("<|startoftext|>", vocab["<|startoftext|>"]),
        add_prefix_space=False,
        trim_offsets=False,
    )
    return tok


def t5_unigram(*, extra_ids: int = 100, eos: str = "</s>", with_words: bool = True) -> Tokenizer:
    """T5's SentencePiece Unigram: `<pad>`, `</s>`, `<unk>`, pieces, then the sentinels `<extra_id_N>` in reverse."""
    pieces: list[tuple[str, float]] = [("<pad>", 0.0), (eos, 0.0), ("<unk>", 0.0), (SPIECE_SPACE, -3.0)]
    pieces += [(ch, -10.0) for ch in ASCII_CHARACTERS]
    if with_words:
        pieces += [(SPIECE_SPACE + w, -5.0 - i * 1e-3) for i, w in enumerate(COMMON_WORDS)]
    pieces += [(f"<extra_id_{i}>", 0.0) for i in reversed(range(extra_ids))]
    tok = Tokenizer(models.Unigram(pieces, unk_id=2, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace(replacement=SPIECE_SPACE, prepend_scheme="always")]
    )
    tok.decoder = decoders.Metaspace(replacement=SPIECE_SPACE, prepend_scheme="always")
    tok.post_processor = processors.TemplateProcessing(
        single=f"$A {eos}", pair=f"$A {eos} $B {eos}", special_tokens=[(eos, 1)]
    )
    return tok


def sentencepiece_bpe(
    specials: Sequence[str],
    *,
    style: str,
    vocab_size: int | None = None,
    bos: str | None = None,
) -> Tokenizer:
    """Llama's or Gemma's SentencePiece-style BPE (`▁` marks a space, byte fallback); `specials` take the first ids.

    `style` is "llama" (Metaspace pre-tokenizer) or "gemma" (spaces replaced by `▁` in the normalizer). With a
    `vocab_size` at or below the specials plus a few pieces (as the dummy Gemma text encoders of the tests need, whose
    vocabulary has 8 entries), everything else is the unknown token.
    """
    limit = vocab_size if vocab_size is not None else 1_000_000
    vocab = {token: i for i, token in enumerate(specials)}
    byte_tokens = [f"<0x{b:02X}>" for b in range(256)] if vocab_size is None else []
    for token in [*byte_tokens, SPIECE_SPACE, *ASCII_CHARACTERS]:
        if len(vocab) < limit and token not in vocab:
            vocab[token] = len(vocab)
    merges: list[tuple[str, str]] = []
    for word in COMMON_WORDS:
        _add_merged_word(vocab, merges, [SPIECE_SPACE, *word], limit=limit)
    unk = "<unk>"
    tok = Tokenizer(
        models.BPE(vocab=vocab, merges=merges, unk_token=unk, fuse_unk=True, byte_fallback=vocab_size is None)
    )
    if style == "llama":
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SPIECE_SPACE, prepend_scheme="first", split=False)
    elif style == "gemma":
        tok.normalizer = normalizers.Replace(" ", SPIECE_SPACE)
        tok.pre_tokenizer = pre_tokenizers.Split(pattern=" ", behavior="merged_with_previous", invert=False)
    else:
        raise ValueError(f"unknown SentencePiece style {style!r}")
    tok.decoder = decoders.Sequence(
        [decoders.Replace(SPIECE_SPACE, " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    if bos is not None:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, vocab[bos])]
        )
    return tok


QWEN2_PRETOKENIZE_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)


def byte_level_bpe(
    special_ids: Mapping[str, int],
    *,
    style: str = "qwen2",
    specials_first: Sequence[str] = (),
    vocab_size: int | None = None,
) -> Tokenizer:
    """GPT-2-style byte-level BPE (Qwen2, RoBERTa, GPT-2): bytes, then word merges (with and without a leading space).

    `special_ids` places special tokens at the ids of the real vocabulary, which must be ascending and contiguous:
    the base vocabulary is filled with never-produced placeholders up to the first of them, and they follow as added
    tokens. The Qwen tests build their text models with the real image/vision token ids (151652…) and with
    `vocab_size=tokenizer.vocab_size + 4`, which both hold only when the base vocabulary has the real 151643 entries
    and the special tokens come after it. `vocab_size` caps the bytes and merges (RoBERTa's stand-in feeds text
    models of 1000 ids).
    """
    limit = vocab_size if vocab_size is not None else 1_000_000
    vocab = {token: i for i, token in enumerate(specials_first)}
    for ch in _byte_alphabet():
        vocab[ch] = len(vocab)
    merges: list[tuple[str, str]] = []
    space = _UNICODE_OF_BYTE[ord(" ")]
    if style == "qwen2":
        for left, right in _trained_merges((*COMMON_WORDS, *TEMPLATE_WORDS), TEMPLATE_PUNCTUATION):
            vocab.setdefault(left + right, len(vocab))
            merges.append((left, right))
    else:
        for word in COMMON_WORDS:
            _add_merged_word(vocab, merges, [space, *word], limit=limit)
            _add_merged_word(vocab, merges, list(word), limit=limit)
    ordered = sorted(special_ids.items(), key=lambda item: item[1])
    if ordered:
        first = ordered[0][1]
        if [token_id for _, token_id in ordered] != list(range(first, first + len(ordered))) or first < len(vocab):
            raise ValueError(f"special ids must be contiguous and above the built vocabulary: {ordered}")
        for i in range(len(vocab), first):
            vocab[f"<|placeholder_{i}|>"] = i  # no merge produces these: they hold ids, as unused entries do
    tok = Tokenizer(
        models.BPE(vocab=vocab, merges=merges, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False)
    )
    tok.add_special_tokens([AddedToken(token, special=True, normalized=False) for token, _ in ordered])
    tok.decoder = decoders.ByteLevel()
    if style == "qwen2":
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(QWEN2_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    elif style in ("roberta", "gpt2"):  # GPT-2's adds no tokens around the text
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        if style == "roberta":
            tok.post_processor = processors.RobertaProcessing(("</s>", vocab["</s>"]), ("<s>", vocab["<s>"]))
    else:
        raise ValueError(f"unknown byte-level style {style!r}")
    return tok


def _trained_merges(words: Sequence[str], pieces: Sequence[str]) -> list[tuple[str, str]]:
    """Byte-level merges that make each word (with and without a leading space) and each piece one token, as the
    real Qwen2 vocabulary does for them. Trained, not chained word by word: a chain of one word's merges would cut
    another word at a shared pair first ("system" into sy|st|e|m), and transformers rebuilds Qwen2's model from the
    vocabulary and merges alone."""
    trainer = trainers.BpeTrainer(
        vocab_size=1_000_000, min_frequency=0, initial_alphabet=_byte_alphabet(), show_progress=False
    )
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.train_from_iterator([p for word in words for p in (" " + word, word)] + list(pieces), trainer)
    return [tuple(merge) for merge in json.loads(tok.to_str())["model"]["merges"]]


def bert_wordpiece() -> Tokenizer:
    """BERT's uncased WordPiece: `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]`, characters, `##` characters, words."""
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokens = [*specials, *ASCII_CHARACTERS, *("##" + ch for ch in ASCII_CHARACTERS), *COMMON_WORDS]
    vocab: dict[str, int] = {}
    for token in tokens:
        vocab.setdefault(token, len(vocab))
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    return tok


def save_tokenizer(
    tok: Tokenizer,
    directory: Path,
    *,
    tokenizer_class: str,
    special_tokens: Mapping[str, str],
    model_max_length: int,
    additional_special_tokens: Iterable[str] = (),
    extra_config: Mapping[str, object] | None = None,
) -> None:
    """Save `tok` as transformers saves a fast tokenizer, naming `tokenizer_class` in tokenizer_config.json.

    The wrapper only serializes; the class named in the config is what `AutoTokenizer` and the family's class load.
    For BPE vocabularies, vocab.json and merges.txt are written too (slow tokenizer classes of older transformers
    read those).
    """
    directory.mkdir(parents=True, exist_ok=True)
    wrapper = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        model_max_length=model_max_length,
        additional_special_tokens=list(additional_special_tokens) or None,
        **special_tokens,
    )
    wrapper.save_pretrained(str(directory))
    config_path = directory / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["tokenizer_class"] = tokenizer_class
    config.update(extra_config or {})
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    model = json.loads(tok.to_str())["model"]
    if model.get("type") == "BPE":
        (directory / "vocab.json").write_text(json.dumps(model["vocab"], ensure_ascii=False) + "\n")
        merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
        (directory / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")


def xlm_roberta_unigram() -> Tokenizer:
    """XLM-RoBERTa's SentencePiece Unigram: `<s>`, `<pad>`, `</s>`, `<unk>`, pieces, then `<mask>`."""
    pieces: list[tuple[str, float]] = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    pieces += [(SPIECE_SPACE, -3.0), *((ch, -10.0) for ch in ASCII_CHARACTERS)]
    pieces += [(SPIECE_SPACE + w, -5.0 - i * 1e-3) for i, w in enumerate(COMMON_WORDS)]
    pieces.append(("<mask>", 0.0))
    tok = Tokenizer(models.Unigram(pieces, unk_id=3, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace(replacement=SPIECE_SPACE, prepend_scheme="always")]
    )
    tok.decoder = decoders.Metaspace(replacement=SPIECE_SPACE, prepend_scheme="always")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 0), ("</s>", 2)]
    )
    return tok
