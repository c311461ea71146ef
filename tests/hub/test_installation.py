"""The install mechanism: what it changes, that it puts everything back, and that it leaves real repos alone."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pytest_nosync.census.hub_standins import (
    STANDINS,
    StandIn,
    built_repos,
    cache_folder_name,
    hub_standins,
    install,
    materialize,
)
from pytest_nosync.census.hub_standins import installation as installation_module

T5 = "hf-internal-testing/tiny-random-t5"


def _globals_watched() -> dict[tuple[str, str], object]:
    """Every attribute the mechanism may change, as it is now."""
    from huggingface_hub import constants

    watched = {
        ("huggingface_hub.constants", name): getattr(constants, name, None)
        for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HUB_OFFLINE")
    }
    copies = {**installation_module._COPIES_OF_CACHE_PATH}
    for module_name, names in installation_module._COPIES_OF_OFFLINE_FLAG.items():
        copies[module_name] = copies.get(module_name, ()) + names
    for module_name, names in copies.items():
        module = sys.modules.get(module_name)
        for name in names:
            watched[(module_name, name)] = getattr(module, name, "<absent>") if module else "<not imported>"
    return watched


def test_install_changes_the_cache_and_offline_flag_then_restores_them(
    standin_root: Path, empty_offline_hub: Path
) -> None:
    from huggingface_hub import constants

    installation_module._imported("transformers.utils.hub")  # so that the comparison sees the same modules
    monkeypatched_offline = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = False  # the mechanism must turn it on, and back off
    try:
        before = _globals_watched()
        restore = install(standin_root, offline=True)
        overlay = restore.overlay
        assert str(overlay) == constants.HF_HUB_CACHE and constants.HF_HUB_OFFLINE is True
        restore()
        assert _globals_watched() == before
        assert not overlay.exists()
        restore()  # twice is harmless
        assert _globals_watched() == before
    finally:
        constants.HF_HUB_OFFLINE = monkeypatched_offline


def test_restored_when_the_block_raises(standin_root: Path, empty_offline_hub: Path) -> None:
    from huggingface_hub import constants

    before = _globals_watched()
    with pytest.raises(RuntimeError, match="inside"), hub_standins(standin_root, offline=True) as installation:
        assert str(installation.overlay) == constants.HF_HUB_CACHE
        raise RuntimeError("inside")
    assert _globals_watched() == before
    assert not installation.overlay or not Path(installation.overlay).exists()


def test_nothing_installed_when_the_hub_is_reachable(standin_root: Path, empty_offline_hub: Path) -> None:
    before = _globals_watched()
    with hub_standins(standin_root, offline=False) as installation:
        assert not installation.active and installation.stood_in == ()
        assert _globals_watched() == before


def test_offline_none_asks_hub_reachable(
    standin_root: Path, empty_offline_hub: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(installation_module, "hub_reachable", lambda: True)
    with hub_standins(standin_root) as installation:
        assert not installation.active
    monkeypatch.setattr(installation_module, "hub_reachable", lambda: False)
    with hub_standins(standin_root, repos=[T5]) as installation:
        assert installation.stood_in == (T5,)


def _fake_cached_repo(cache: Path, repo_id: str, config: dict) -> None:
    entry = cache / cache_folder_name(repo_id)
    commit = "0123456789abcdef0123456789abcdef01234567"
    (entry / "refs").mkdir(parents=True)
    (entry / "refs" / "main").write_text(commit)
    snapshot = entry / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(config))


def test_a_repo_in_the_real_cache_is_used_not_replaced(standin_root: Path, empty_offline_hub: Path) -> None:
    from transformers import AutoConfig

    _fake_cached_repo(empty_offline_hub, T5, {"model_type": "t5", "d_model": 64, "num_heads": 2, "d_kv": 32})
    with hub_standins(standin_root, offline=True) as installation:
        assert T5 not in installation.stood_in
        assert "hf-internal-testing/tiny-random-clip" in installation.stood_in
        assert AutoConfig.from_pretrained(T5).d_model == 64  # the cached one, not the stand-in's 32
    assert (empty_offline_hub / cache_folder_name(T5) / "refs" / "main").is_file()  # untouched


def test_unknown_repo_ids_are_refused(standin_root: Path, empty_offline_hub: Path) -> None:
    with pytest.raises(KeyError, match="no hub stand-in"):
        install(standin_root, offline=True, repos=["someone/not-registered"])


def test_materialize_builds_once_and_rebuilds_a_changed_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Path] = []

    def build(directory: Path) -> None:
        calls.append(directory)
        (directory / "config.json").write_text("{}")

    standin = StandIn("example/tiny", build, "a test repository")
    monkeypatch.setitem(STANDINS, standin.repo_id, standin)
    first = materialize(standin.repo_id, tmp_path)
    assert materialize(standin.repo_id, tmp_path) == first and len(calls) == 1
    assert (first / "config.json").is_file()
    newer = StandIn("example/tiny", build, "a test repository", version=2)
    monkeypatch.setitem(STANDINS, newer.repo_id, newer)
    assert materialize(newer.repo_id, tmp_path) == first and len(calls) == 2
    assert built_repos.is_complete(newer, first)


def test_an_interrupted_build_leaves_nothing_taken_for_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(directory: Path) -> None:
        (directory / "config.json").write_text("{}")
        raise RuntimeError("interrupted")

    standin = StandIn("example/broken", broken, "a test repository")
    monkeypatch.setitem(STANDINS, standin.repo_id, standin)
    with pytest.raises(RuntimeError, match="interrupted"):
        materialize(standin.repo_id, tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [built_repos.LOCKS]  # no repository, half-built or not


def test_a_standin_whose_build_lacks_a_module_is_left_out(
    tmp_path: Path, empty_offline_hub: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def build(directory: Path) -> None:
        raise AssertionError("must not be built")

    standin = StandIn("example/needs-more", build, "a test repository", requires=("no_such_module_for_nosync",))
    monkeypatch.setitem(STANDINS, standin.repo_id, standin)
    with hub_standins(tmp_path, offline=True, repos=[standin.repo_id]) as installation:
        assert installation.stood_in == ()
        assert installation.unavailable == {standin.repo_id: ["no_such_module_for_nosync"]}


@pytest.mark.parametrize("repo_id", [T5, "hf-internal-testing/tiny-random-chatglm3-6b"])
def test_builds_are_reproducible(repo_id: str, tmp_path: Path) -> None:
    for module in STANDINS[repo_id].requires:
        pytest.importorskip(module)
    first, second = (materialize(repo_id, tmp_path / name) for name in ("a", "b"))
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    for relative in files:
        assert (first / relative).read_bytes() == (second / relative).read_bytes(), relative
