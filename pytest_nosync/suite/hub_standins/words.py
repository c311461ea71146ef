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
