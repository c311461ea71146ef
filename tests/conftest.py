"""What every test directory shares: the hub stand-ins built once per run, not once per pytester session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def shared_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An XDG cache home shared by this run's xdist workers (the parent of their base temps): the stand-ins a census
    installs are built there once, a file lock keeping two workers from building the same one."""
    return tmp_path_factory.getbasetemp().parent / "xdg-cache"


def _import_ahead_of_in_process_runs() -> None:
    """Imports made before a test's first in-process pytester run: pytester unloads the modules a run imported, and
    importing them again goes wrong. torch: registering with torch a second time, which torch refuses
    (torch.profiler's start imports torch._inductor and dynamo; torch.compile imports its compiler, which registers
    the quantized_decomposed op library). diffusers: the next run's `enable_cache` compared a cache config of the hook
    module imported again with the class diffusers' lazy attributes kept from the first ("Cache config
    FirstBlockCacheConfig is not supported"), in tests that failed or passed by the order xdist gave them. Made for
    processes that may run tests in-process, at this file's load (some tests run a library block in a snapshot of
    sys.modules without pytester): not in xdist's controller, which runs no test, nor in a run of the slow tests, which
    start processes of their own, nor in a run that only collects. Nine seconds of imports each."""
    import diffusers.hooks
    import diffusers.models.cache_utils
    import diffusers.pipelines.pipeline_utils  # noqa: F401  (the marker finds a test's pipeline by its base class)
    import torch._inductor.compile_fx
    import torch._inductor.config  # noqa: F401


def pytest_configure(config: pytest.Config) -> None:
    controller = bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")
    if not controller and config.option.markexpr != "slow" and not config.option.collectonly:
        _import_ahead_of_in_process_runs()


@pytest.fixture
def deterministic_algorithms_restored() -> Iterator[None]:
    """The process's deterministic-algorithms setting (and its warn-only flag) put back after the test, whatever the
    test or the modules it ran set."""
    import torch  # here: this file's load imports no torch (xdist's controller, the slow tests' runs)

    found = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(found[0], warn_only=found[1])


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, shared_cache_home: Path) -> pytest.Pytester:
    """pytester points HOME at the test's own directory, so each session would build every stand-in again (ten
    seconds of a census test's twelve): its runs keep them where the whole run does."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared_cache_home))
    return pytester
