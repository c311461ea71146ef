"""Hub stand-ins: repositories built in code for the hub ids diffusers' pipeline tests load.

When the Hugging Face hub cannot be reached (an air-gapped runner, HF_HUB_OFFLINE) and a repository such as
`hf-internal-testing/tiny-random-t5` is not in the local cache, `get_dummy_components()` of diffusers' tester
classes fails, or worse, transformers builds an empty tokenizer. `install()` serves tiny stand-ins instead: seeded
random-weight models from configs in code and tokenizers built with the `tokenizers` library; nothing is fetched.

standin       what a stand-in is: a repository id and the function that writes the repository
registry      hub id -> its stand-in (STANDINS)
diffusers_repos text_repos vision_language_repos
              the builders, by kind: diffusers model repositories, text encoders, vision-language models
seeded        tiny random-weight models from a seed; tokenizer_builds, words: tokenizers built in code, their words
built_repos   a stand-in built once into a directory, reused while complete and current
installation  `from_pretrained("<hub id>")` finding the stand-ins (an overlay cache, offline mode on)
reachability  whether the hub can be reached, decided quickly
modular_repos the Modular Diffusers testers' repositories: their components, built in code (census.modular)
modular_builds  the components of the modular repositories of families with no classic tester to borrow from, or
              whose classic tester's components their blocks need changed
classic_components  a family's classic tester's dummy components, which modular stand-ins are made of
"""

from .built_repos import default_root, materialize
from .installation import Installation, cache_folder_name, hub_standins, install, present_in_cache
from .reachability import hub_reachable, offline_requested
from .registry import STANDINS
from .standin import StandIn

__all__ = [
    "STANDINS",
    "Installation",
    "StandIn",
    "cache_folder_name",
    "default_root",
    "hub_reachable",
    "hub_standins",
    "install",
    "materialize",
    "offline_requested",
    "present_in_cache",
]
