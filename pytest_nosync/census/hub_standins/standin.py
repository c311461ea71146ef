"""What a hub stand-in is: a repository id and a function that writes the whole repository into a directory."""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class StandIn:
    """A repository built in code for an id on the hub.

    `build(directory)` writes every file the tests read (configs, tokenizer files, tiny seeded weights) with
    `save_pretrained`; `version` is raised whenever what `build` writes changes, so saved copies are rebuilt.
    `covers` says what the tests get from it, for people reading the registry. `requires` names modules the
    build needs beyond transformers and tokenizers (the tests that load the repository need them too); without
    them the stand-in is left out.
    """

    repo_id: str
    build: Callable[[Path], None]
    covers: str
    version: int = 1
    requires: tuple[str, ...] = ()

    def missing_requirements(self) -> list[str]:
        return [name for name in self.requires if importlib.util.find_spec(name) is None]

    @property
    def commit_hash(self) -> str:
        """A stable 40-hex "commit" for the cache layout, derived from the id and the version."""
        return hashlib.sha1(f"pytest-nosync stand-in {self.repo_id} v{self.version}".encode()).hexdigest()

    @property
    def folder_name(self) -> str:
        """The directory name of the built repository: the id with its slash made safe."""
        return self.repo_id.replace("/", "--")
