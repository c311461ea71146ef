"""Fixtures of the hub stand-in tests: the stand-ins built once per run, and an empty, offline HF home."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_nosync.census.hub_standins import STANDINS, materialize


@pytest.fixture(scope="session")
def standin_root(shared_cache_home: Path) -> Path:
    """Every registered stand-in, built once into the run's directory (where a census of this run finds them too)."""
    root = shared_cache_home / "pytest-nosync" / "hub-standins"
    for repo_id, standin in STANDINS.items():
        if not standin.missing_requirements():
            materialize(repo_id, root)
    return root


@pytest.fixture
def empty_offline_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """HF_HUB_OFFLINE=1 and an empty HF home and cache, so nothing real is read or fetched; returns the cache."""
    from huggingface_hub import constants

    cache = tmp_path / "hf-home" / "hub"
    cache.mkdir(parents=True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(cache.parent))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    # huggingface_hub read the environment when it was imported: its constants follow the test's environment too.
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache
