"""The census in shards, its pytest side: `--nosync-shard=K/N` collects only the test modules of the K-th shard
(census.shards packs them), and `--nosync-durations=PATH` reads the durations it packs by; an unsharded census run
writes its items' durations there (`census merge --durations` writes a sharded run's). Under pytest-xdist the same
durations order the tester classes longest first, so the long ones do not start last and leave the other workers idle;
without the option, the last run's durations in pytest's cache do (never a shard plan: every machine has its own).

A shard's report says which shard of which plan and selection it is (`record`), so that `census merge` refuses a
missing shard, a shard of another plan, selection, checkout or plugin version before merging anything.
"""

from __future__ import annotations

import fnmatch
import importlib.metadata
import os
from pathlib import Path
from typing import Any

import pytest

from .. import ids
from ..census import shards
from ..census.changes import ChangesError, resolve
from ..option_table import Settings
from . import xdist

SKIPPED_DIRS = ("__pycache__", "node_modules")
CACHE_KEY = "nosync/census_durations"  # in pytest's cache: the census items' seconds of the runs so far


class CensusShards:
    """Registered by the session: plans the shards at the session's start, ignores the other shards' modules."""

    def __init__(self, config: pytest.Config, settings: Settings, role: xdist.Role, durations: dict[str, float],
                 unwritten: list[str]) -> None:  # fmt: skip
        self.config = config
        self.settings = settings
        self.role = role
        self.durations = durations  # the session's: test id → seconds, where results arrive
        self.unwritten = unwritten  # the session's: outputs that could not be written at the end
        self.plan: shards.Plan | None = None
        self.kept: set[str] | None = None  # the shard's modules, relative to the rootdir; None: every module
        self.ignored: set[str] = set()  # the other shards' modules
        self.recorded: shards.Durations = {}
        self.cached: shards.Durations = {}  # pytest's cache's, as the run starts (this plugin's earlier runs')
        self.ordering: shards.Durations = {}  # what the workers take the classes by: recorded, else the cache's

    @property
    def shard(self) -> ids.Shard | None:
        return self.settings.shard

    # Before collection, on every process of the run (an xdist controller says the usage error; its workers plan the
    # same shards).
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        path = self.settings.durations
        try:
            self.recorded = shards.read_durations(path) if path else {}
            cache = getattr(self.config, "cache", None)
            self.cached = _cached(cache.get(CACHE_KEY, {})) if cache is not None else {}
            self.ordering = self.recorded or self.cached
            if self.shard is None:
                return
            modules = candidate_modules(self.config)
            if path:
                shards.check_durations_name(self.recorded, modules, path)
        except shards.ShardError as exc:
            raise pytest.UsageError(f"--nosync-durations: {exc}") from None
        # diffusers' families of the classes each module tests (imports diffusers: a sharded census run only)
        from ..census.untested import module_families

        kin = module_families(self.config.rootpath, modules)
        self.plan = shards.pack(modules, self.recorded, self.shard.count, kin)
        self.kept = set(self.plan.modules(self.shard))
        self.ignored = set(modules) - self.kept

    def elsewhere(self, path: Path) -> bool:
        """A test module of another shard. pytest asks pytest_ignore_collect only of what it finds in a folder: a
        module named on the command line is collected in every shard, and the census gives it no checks but in its
        own."""
        return bool(self.ignored) and _relative(path, self.config.rootpath) in self.ignored

    def pytest_ignore_collect(self, collection_path: Path, config: pytest.Config) -> bool | None:
        return True if self.elsewhere(collection_path) else None

    @pytest.hookimpl(trylast=True)  # on the final selection, in every worker alike (one durations file)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        if not self.ordering or not xdist.distributing(self.config):
            return
        classes = {census.tester for item in items if (census := ids.parse(item.nodeid)) is not None}
        if classes:
            items[:] = xdist.longest_first(items, shards.class_seconds(classes, self.ordering))

    def pytest_report_collectionfinish(self, config: pytest.Config, items: list[pytest.Item]) -> list[str]:
        return [self.plan.header(self.shard)] if self.plan is not None and self.shard is not None else []

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.role is xdist.Role.WORKER:
            return
        measured = {t: s for t, s in self.durations.items() if ids.parse(t) is not None}
        if not measured:  # only the census's items: what the next run's shards are packed by
            return
        cache = getattr(self.config, "cache", None)
        if cache is not None:  # the next run's order where it is given no durations file
            cache.set(CACHE_KEY, {**self.cached, **measured})
        path = self.settings.durations
        # A shard leaves the file as it found it: the next shard of the same plan packs by it (its durations travel in
        # its report, and `census merge --durations` writes them all).
        if not path or self.shard is not None:
            return
        try:
            shards.write_durations(path, {**self.recorded, **measured})
        except OSError as exc:  # checked writable before the run; something changed since
            said = f"nosync: --nosync-durations: could not write it at the end of the run: {exc}"
            self.unwritten.append(said)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR

    def record(self) -> dict[str, Any]:
        """What the report says of the shard: `census merge` checks the shards are one plan's, of one selection."""
        if self.plan is None or self.shard is None:
            return {}
        config = self.config
        settings = self.settings
        return {
            "shard": {
                "index": self.shard.index,
                "count": self.shard.count,
                "plan": self.plan.fingerprint,
                "modules": list(self.plan.modules(self.shard)),
                "selection": {
                    "args": sorted(_relative(Path(a), config.rootpath) for a in config.args),
                    "markexpr": config.option.markexpr or "",
                    "keyword": config.option.keyword or "",
                    "checks": list(settings.pipeline_checks),
                    "scenarios": [getattr(s, "name", str(s)) for s in settings.scenarios],
                    "dtype": settings.dtype or "",
                    "backend": settings.backend,
                },
                "checkout": _commit(config.rootpath),
                "plugin": _plugin_version(),
            }
        }


def _cached(raw: Any) -> shards.Durations:
    """The cache's durations, where they are what this plugin wrote (a hand-edited cache orders nothing)."""
    if not isinstance(raw, dict):
        return {}
    return {k: float(v) for k, v in raw.items() if isinstance(k, str) and isinstance(v, (int, float))}


def candidate_modules(config: pytest.Config) -> list[str]:
    """The test modules the run's paths name, relative to the rootdir (posix), as pytest would find them by name."""
    patterns = config.getini("python_files")
    skipped = list(config.getini("norecursedirs"))
    found: set[str] = set()
    for arg in config.args:
        start = Path(ids.node_path(arg))
        start = start if start.is_absolute() else Path(config.invocation_params.dir) / start
        if start.is_file():
            found.add(_relative(start, config.rootpath))
            continue
        for top, dirs, files in os.walk(start):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS
                             and not any(fnmatch.fnmatch(d, p) for p in skipped))  # fmt: skip
            found.update(_relative(Path(top) / f, config.rootpath) for f in files
                         if any(fnmatch.fnmatch(f, p) for p in patterns))  # fmt: skip
    return sorted(found)


def _relative(path: Path, root: Path) -> str:
    try:
        return Path(os.path.abspath(path)).relative_to(root).as_posix()
    except ValueError:
        return Path(os.path.abspath(path)).as_posix()


def _commit(root: Path) -> str:
    """The commit of the checkout under test ("" outside git): shards of two checkouts are not one census."""
    try:
        return resolve(root, "HEAD")[1]
    except ChangesError:
        return ""


def _plugin_version() -> str:
    try:
        return importlib.metadata.version("pytest-nosync")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
