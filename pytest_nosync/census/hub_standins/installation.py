"""Making `from_pretrained("<hub id>")` find the stand-ins: an overlay cache directory, offline mode on.

Why an overlay cache and not patching functions. transformers (configs, models, tokenizers, processors, image
processors) and diffusers (models, schedulers, pipelines, `subfolder=`) all end in huggingface_hub's cache lookup,
`hf_hub_download`/`snapshot_download`, which in offline mode read `refs/main` and `snapshots/<commit>/<file>` under
`huggingface_hub.constants.HF_HUB_CACHE`, looked up at call time. Writing a cache layout whose snapshots are the
built stand-ins and pointing that constant at it therefore serves every loader, in every version of transformers
and diffusers, through their own unmodified code. The alternatives are worse: the download functions are imported by
name into many modules (`from huggingface_hub import hf_hub_download`), which differ between versions, so patching
them means chasing import sites; patching `from_pretrained` means chasing dozens of classmethods (Auto classes,
tokenizer, processor and image-processor bases, diffusers mixins) and their internal file lookups.

The overlay holds a symlink to every entry of the user's real cache, so repositories present there are used as they
are and never replaced (a repository counts as present when it has a snapshot); only registered repositories absent
from it get a stand-in entry. Offline mode is switched on for the duration (`constants.HF_HUB_OFFLINE`), so nothing
is downloaded and no request is attempted. Older transformers copies the cache path and the offline flag into
`transformers.utils.hub` at import, and diffusers copies the offline flag into two modules: those copies are patched
too, after importing the modules first so that none captures a patched value. Every changed attribute is put back by
`Installation.restore()`, also when the guarded block raises; the overlay directory is then removed (the built
stand-ins stay under the root for the next run). A module first imported while installed that copies the offline
flag keeps that copy: the known importers are imported up front for this reason.
"""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from huggingface_hub import constants

from .built_repos import default_root, materialize
from .reachability import hub_reachable
from .registry import STANDINS

_MISSING = object()

# Modules that copy huggingface_hub's cache path or offline flag at import time, and the names they copy them to.
_COPIES_OF_CACHE_PATH = {"transformers.utils.hub": ("TRANSFORMERS_CACHE", "PYTORCH_TRANSFORMERS_CACHE")}
_COPIES_OF_OFFLINE_FLAG = {
    "transformers.utils.hub": ("_is_offline_mode",),
    "diffusers.utils.hub_utils": ("HF_HUB_OFFLINE",),
    "diffusers.loaders.lora_base": ("HF_HUB_OFFLINE",),
}


@dataclass
class Installation:
    """What `install` did; call it (or `.restore()`) to undo it. Restoring twice is harmless."""

    overlay: Path | None = None
    stood_in: tuple[str, ...] = ()
    unavailable: dict[str, list[str]] = field(default_factory=dict)  # repo id -> modules its build lacks
    _patches: list[tuple[object, str, object]] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return self.overlay is not None

    def _set(self, owner: object, name: str, value: object) -> None:
        self._patches.append((owner, name, getattr(owner, name, _MISSING)))
        setattr(owner, name, value)

    def restore(self) -> None:
        while self._patches:
            owner, name, old = self._patches.pop()
            if old is _MISSING:
                with suppress(AttributeError):
                    delattr(owner, name)
            else:
                setattr(owner, name, old)
        if self.overlay is not None:
            shutil.rmtree(self.overlay, ignore_errors=True)
            self.overlay = None

    __call__ = restore


def cache_folder_name(repo_id: str, repo_type: str = "model") -> str:
    """huggingface_hub's folder name for a repository in its cache ("models--org--name")."""
    return f"{repo_type}s--" + repo_id.replace("/", "--")


def present_in_cache(cache: Path, repo_id: str) -> bool:
    """Whether the real cache holds a snapshot of `repo_id` (then it is left alone)."""
    snapshots = Path(cache) / cache_folder_name(repo_id) / "snapshots"
    return snapshots.is_dir() and any(child.is_dir() and any(child.iterdir()) for child in snapshots.iterdir())


def _write_standin_entry(overlay: Path, repo_id: str, built: Path) -> None:
    standin = STANDINS[repo_id]
    entry = overlay / cache_folder_name(repo_id)
    (entry / "refs").mkdir(parents=True)
    (entry / "refs" / "main").write_text(standin.commit_hash)
    (entry / "snapshots").mkdir()
    (entry / "snapshots" / standin.commit_hash).symlink_to(built.resolve(), target_is_directory=True)


def _build_overlay(real_cache: Path, built: dict[str, Path]) -> Path:
    overlay = Path(tempfile.mkdtemp(prefix="nosync-hub-overlay-"))
    taken = {cache_folder_name(repo_id) for repo_id in built}
    if real_cache.is_dir():
        for child in real_cache.iterdir():
            if child.name not in taken:
                (overlay / child.name).symlink_to(child.resolve(), target_is_directory=child.is_dir())
    for repo_id, directory in built.items():
        _write_standin_entry(overlay, repo_id, directory)
    return overlay


def _imported(module_name: str) -> object | None:
    try:
        return importlib.import_module(module_name)
    except Exception:  # not installed, or an optional dependency of it is missing: nothing copied there
        return None


def install(
    root: Path | None = None,
    *,
    offline: bool | None = None,
    repos: Iterable[str] | None = None,
) -> Installation:
    """Serve the registered stand-ins to `from_pretrained` while the hub cannot be reached.

    `offline=None` decides with `hub_reachable()`; `False` installs nothing (the hub serves the real repositories);
    `True` installs regardless. `repos` limits the stand-ins to those ids (default: all registered). Stand-ins are
    built into `root` (default: `default_root()`) on first use; one whose build needs a module that is not installed
    is left out and listed in `Installation.unavailable`. Returns the `Installation`; call it to restore.
    """
    if offline is None:
        offline = not hub_reachable()
    installation = Installation()
    if not offline:
        return installation
    wanted = list(STANDINS) if repos is None else list(repos)
    unknown = [repo_id for repo_id in wanted if repo_id not in STANDINS]
    if unknown:
        raise KeyError(f"no hub stand-in registered for {unknown}")
    real_cache = Path(constants.HF_HUB_CACHE)
    missing = [repo_id for repo_id in wanted if not present_in_cache(real_cache, repo_id)]
    for repo_id in list(missing):
        lacking = STANDINS[repo_id].missing_requirements()
        if lacking:
            installation.unavailable[repo_id] = lacking
            missing.remove(repo_id)
    root = Path(root) if root is not None else default_root()
    # Processes starting together (xdist's workers) each begin at another repository: each builds some while the
    # others build the rest, rather than all waiting for the first one's builder.
    start = os.getpid() % len(missing) if missing else 0
    made = {repo_id: materialize(repo_id, root) for repo_id in missing[start:] + missing[:start]}
    built = {repo_id: made[repo_id] for repo_id in missing}  # in the registry's order
    copies = {name: _imported(name) for name in {*_COPIES_OF_CACHE_PATH, *_COPIES_OF_OFFLINE_FLAG}}
    overlay = _build_overlay(real_cache, built)
    try:
        installation.overlay = overlay
        installation.stood_in = tuple(built)
        installation._set(constants, "HF_HUB_CACHE", str(overlay))
        if hasattr(constants, "HUGGINGFACE_HUB_CACHE"):
            installation._set(constants, "HUGGINGFACE_HUB_CACHE", str(overlay))
        installation._set(constants, "HF_HUB_OFFLINE", True)
        for module_name, names in _COPIES_OF_CACHE_PATH.items():
            module = copies[module_name]
            for name in names:
                if module is not None and getattr(module, name, None) == str(real_cache):
                    installation._set(module, name, str(overlay))
        for module_name, names in _COPIES_OF_OFFLINE_FLAG.items():
            module = copies[module_name]
            for name in names:
                if module is not None and isinstance(getattr(module, name, None), bool):
                    installation._set(module, name, True)
    except BaseException:
        installation.restore()
        raise
    return installation


@contextmanager
def hub_standins(
    root: Path | None = None,
    *,
    offline: bool | None = None,
    repos: Iterable[str] | None = None,
) -> Iterator[Installation]:
    """`install(...)` for the duration of a `with` block, restored on the way out, also when the block raises."""
    installation = install(root, offline=offline, repos=repos)
    try:
        yield installation
    finally:
        installation.restore()
