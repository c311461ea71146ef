"""The small English vocabulary the built tokenizers know as whole words.

Diffusers' dummy inputs use short prompts ("A painting of a squirrel eating a burger", "dance monkey", "bad
quality") and the pipelines wrap them in instruction templates; the words below cover those, so a prompt
tokenizes into a few word pieces instead of only characters. Anything else still tokenizes, piece by piece.
"""

from __future__ import annotations

_WORDS = """
    a an the of and or in on at to for with from by is are was be it this that as not no
    painting photo picture image video frame cat dog squirrel eating burger dance monkey bad quality good
    high low best worst blurry detailed realistic beautiful ugly man woman person people child face hand
    red green blue yellow black white orange purple color colour light dark sky sun moon sea water fire tree
    forest mountain city street house car road river flower garden space astronaut horse riding sitting
    standing walking running playing flying small large big little old new young happy sad style art
    you are assistant user system describe prompt text generate given following detail details scene
    object objects background foreground camera shot view motion movement subject subjects
    please give answer question image_pad vision start end pad
"""
COMMON_WORDS: tuple[str, ...] = tuple(dict.fromkeys(_WORDS.split()))

ASCII_CHARACTERS: tuple[str, ...] = tuple(chr(c) for c in range(33, 127))

# The words of the instruction templates diffusers' pipelines wrap a prompt in for Qwen2-family text encoders
# (QwenImage, Kandinsky 5, HunyuanImage, LongCat; diffusers main at 58eb52c080), as written, and punctuation the real
# Qwen2 vocabulary holds whole. The pipelines cut the template off by a token count measured with the real tokenizer
# (`prompt_template_encode_start_idx`: 34 for QwenImage); spelled out in bytes the template was 2-3 times as long, and
# Kandinsky 5's image-to-image truncation then cut the image tokens off the end of its text. Not whole in the real
# vocabulary, not whole here: Kandinsky 5's typo "promt" (" prom" + "t"; its text-to-image template counts 41 tokens,
# and one fewer leaves an empty negative prompt no token at all).
_TEMPLATE_WORDS = """
    Describe detailing shape size texture quantity spatial relationships You prom engineer Based provided source
    first target second create interesting can used together As captioning expert descriptive based content
    suitable input model editing analyze attributes s Then instructions clearly precisely determine how modify
    ensuring only specified parts altered all other aspects remain consistent original key features then explain
    instruction should alter Generate meets requirements while maintaining consistency where appropriate
"""
TEMPLATE_WORDS: tuple[str, ...] = tuple(w for w in dict.fromkeys(_TEMPLATE_WORDS.split()) if w not in COMMON_WORDS)
TEMPLATE_PUNCTUATION: tuple[str, ...] = (" (", "),", ").", "'s", ":", ".")
