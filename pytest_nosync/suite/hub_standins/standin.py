"""What a hub stand-in is: a repository id and a function that writes the whole repository into a directory."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class StandIn:
    """A repository built in code for an id on the hub.

    `build(directory)` writes every file the tests read (configs, tokenizer files, tiny seeded weights) with
    `save_pretrained`; `version` is raised whenever what `build` writes changes, so saved copies are rebuilt.
    `covers` says what the tests get from it, for people reading the registry.
    """

    repo_id: str
    build: Callable[[Path], None]
    covers: str
    version: int = 1

    @property
    def commit_hash(self) -> str:
        """A stable 40-hex "commit" for the cache layout, derived from the id and the version."""
        return hashlib.sha1(f"pytest-nosync stand-in {self.repo_id} v{self.version}".encode()).hexdigest()

    @property
    def folder_name(self) -> str:
        """The directory name of the built repository: the id with its slash made safe."""
        return self.repo_id.replace("/", "--")
