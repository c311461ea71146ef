"""Processes that build the stand-ins at once (a census's xdist workers on a fresh runner): each repository is built
by one of them, the others take what it built."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_nosync.census.hub_standins import STANDINS, StandIn, built_repos, materialize

REPOS = ("example/first", "example/second", "example/third")


def _slow_build(log: Path) -> Callable[[Path], None]:  # a builder that records each build
    def build(directory: Path) -> None:
        time.sleep(0.3)  # long enough that the processes overlap
        (directory / "config.json").write_text("{}")
        with open(log, "a") as out:
            out.write(directory.name[: -len("-xxxxxxxx")] + "\n")  # mkdtemp's staging: .<folder>-<8 random>

    return build


def _materialize_all(root: Path, start: int) -> None:
    for repo_id in REPOS[start:] + REPOS[:start]:
        materialize(repo_id, root)


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="the builders are inherited by forked processes")
def test_processes_building_at_once_build_each_repository_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "builds.log"
    for repo_id in REPOS:
        monkeypatch.setitem(STANDINS, repo_id, StandIn(repo_id, _slow_build(log), "a test repository"))
    root = tmp_path / "root"
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_materialize_all, args=(root, start)) for start in (0, 1, 2)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=60)
    assert [process.exitcode for process in processes] == [0, 0, 0]
    built = log.read_text().split()
    assert sorted(built) == sorted(f".{repo_id.replace('/', '--')}" for repo_id in REPOS)  # each once
    assert all(built_repos.is_complete(STANDINS[r], root / STANDINS[r].folder_name) for r in REPOS)
