"""The pytest side of pytest-nosync (entry point `nosync`): options, markers, the run's session and thin fixtures.

Off means off: without --nosync this module registers the options and markers, validates markers and skips gpu tests
without a GPU, and imports nothing of the package beyond the option table. With --nosync it starts the run
(plugin.start): a NosyncSession (plugin.session) holds the run's and each test's state, hook objects by phase answer
pytest, and the fixtures below only hand a test what the session gives.

    def test_loop(nosync, pipe):
        with nosync.guard(pipe) as g:
            pipe(prompt_embeds=..., callback_on_step_end=g.callback_on_step_end)

    @pytest.mark.parametrize("nosync_target", [MY_TARGET], indirect=True)
    def test_my_pipeline(nosync_check, nosync):
        nosync.add_report(nosync_check("syncs"))
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import options

if TYPE_CHECKING:
    import torch

    from ..findings import Report
    from ..scenarios import Scenario
    from ..suite.targets.base import CallContext, Target
    from .fixture import NosyncFixture
    from .session import NosyncSession

SESSION = pytest.StashKey["NosyncSession"]()
BENCHMARK_DIR = pytest.StashKey["Path | None"]()
NOT_CHECKING = "the suite's fixtures check nothing without --nosync: run `pytest -m gpu --nosync`"


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", options.MARKER_HELP)
    config.addinivalue_line("markers", options.GPU_MARKER_HELP)
    if not config.pluginmanager.has_plugin("xdist"):
        config.addinivalue_line("markers", options.XDIST_GROUP_HELP)
    config.pluginmanager.register(NotRun(), "nosync-not-run")
    config.stash[BENCHMARK_DIR] = _benchmark_dir_to_clean(config)
    if not options.checking(config):
        given = options.given_flags(config)
        if given:  # an option that would change nothing must not look as if it did
            raise pytest.UsageError(f"{given[0]} was given without --nosync, which turns checking on: add --nosync")
        return
    from .start import start  # plugin cheap when off: a checking run's session and all it imports

    config.stash[SESSION] = start(config)


def _benchmark_dir_to_clean(config: pytest.Config) -> Path | None:
    """pytest-benchmark, which this plugin installs, makes its storage directory (`.benchmarks/`) in the working
    directory in every run, saving or not: the one it is about to make, if it does not exist yet."""
    storage = config.getoption("benchmark_storage", default=None)
    if not isinstance(storage, str) or not storage.startswith("file://"):
        return None
    path = Path(storage.removeprefix("file://")).absolute()
    return None if path.exists() else path


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    # A run that saved nothing leaves no empty `.benchmarks/` behind (one that saved a benchmark keeps it).
    path = config.stash.get(BENCHMARK_DIR, None)
    if path is not None and path.is_dir() and not any(path.iterdir()):
        with contextlib.suppress(OSError):
            path.rmdir()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Every marker validated up front, checking or not: a typo fails the run at once, not only on the GPU runner.
    for item in items:
        marker = item.get_closest_marker("nosync")
        if marker is None:
            continue
        try:
            options.parse_marker(marker.args, marker.kwargs)
        except options.OptionError as exc:
            raise pytest.UsageError(f"{item.nodeid}: {exc}") from None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if SESSION in item.config.stash or item.get_closest_marker("gpu") is None:
        return  # a checking run's session decides where gpu tests run
    from ..detection import devices  # plugin cheap when off: torch only for a test marked gpu

    if not devices.cuda_available():
        pytest.skip(
            "needs a CUDA device: run `pytest -m gpu --nosync` on a GPU runner "
            "(or `--nosync --nosync-backend emulate` on the CPU)"
        )


class NotRun:
    """The gpu/nosync tests that were skipped, with their reasons, at the end of every run (checking or not) without
    -rs: a check that did not run must be visible, whatever the exit status says."""

    def __init__(self) -> None:
        self.skipped: dict[str, list[str]] = {}  # reason → test ids

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and ("gpu" in report.keywords or "nosync" in report.keywords):
            longrepr = report.longrepr
            reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
            self.skipped.setdefault(reason.removeprefix("Skipped: "), []).append(report.nodeid)

    @pytest.hookimpl(trylast=True)  # after the session's section
    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        if not self.skipped:
            return
        from .xdist import Role, role  # plugin cheap when off: only a run that skipped a check asks

        if role(config) is Role.WORKER:  # a worker's results reach its controller, which says it
            return
        total = sum(len(ids) for ids in self.skipped.values())
        # reasons of one count by their text, each example the first by id: not the order the workers finished in
        grouped = sorted(
            ((reason, sorted(ids)) for reason, ids in self.skipped.items()), key=lambda g: (-len(g[1]), g[0])
        )
        if len(grouped) == 1:  # one reason: one line
            ((reason, ids),) = grouped
            terminalreporter.write_line(f"nosync: {total} check(s) did not run: {reason} (e.g. {ids[0]})", yellow=True)
            return
        terminalreporter.write_line(f"nosync: {total} check(s) did not run:", yellow=True)
        for reason, ids in grouped:
            terminalreporter.write_line(f"  {len(ids)} × {reason} (e.g. {ids[0]})", yellow=True)


# ---- fixtures: thin, over the session --------------------------------------------------------------------------
def _session(request: pytest.FixtureRequest) -> NosyncSession:
    session = request.config.stash.get(SESSION, None)
    if session is None:
        pytest.skip(NOT_CHECKING)
    return session


@pytest.fixture
def nosync(request: pytest.FixtureRequest) -> NosyncFixture:
    """Guard blocks of the test and mark steps (see plugin.fixture.NosyncFixture); disarmed without --nosync."""
    from .fixture import NosyncFixture  # plugin cheap when off: only a test that takes the fixture

    return NosyncFixture(request.node, request.config.stash.get(SESSION, None))


@pytest.fixture(scope="session")
def nosync_device(request: pytest.FixtureRequest) -> torch.device:
    """The device of the run's backend (cuda, or the emulated device), for tests written once for both; without
    --nosync, cuda where a GPU is visible and the CPU elsewhere. One for the whole run, so that a module- or
    session-scoped fixture (a pipeline built once) may take it."""
    from ..detection import devices  # plugin cheap when off: torch only for a test that takes the device

    session = request.config.stash.get(SESSION, None)
    if session is not None:
        return devices.execution_device(session.settings.backend)
    return devices.plain_device()


@pytest.fixture(scope="session")
def nosync_dtype(request: pytest.FixtureRequest) -> torch.dtype:
    """The dtype the run's pipelines run in (`--nosync-dtype`; else bfloat16 on CUDA, float32 emulated), for a
    pipeline fixture that builds as users run: it follows the option as the suite's targets do. Without --nosync,
    bfloat16 where a GPU is visible and float32 elsewhere."""
    session = request.config.stash.get(SESSION, None)
    if session is not None:
        return session.suite.call_context.dtype
    from ..detection import devices  # plugin cheap when off: torch only for a test that takes the dtype

    return devices.plain_dtype()


@pytest.fixture
def nosync_target(request: pytest.FixtureRequest) -> Target:
    """The Target under test: a built-in one by name, or your own Target object (`indirect=True`)."""
    return _session(request).suite.target(request)


@pytest.fixture
def nosync_scenario(request: pytest.FixtureRequest) -> Scenario:
    """The scenario the test checks its pipeline with (pytest_nosync.scenarios): one of --nosync-scenarios for the
    suite's checks, plain where the test is not parametrized by it."""
    from ..scenarios import PLAIN, SCENARIOS  # plugin cheap when off: the scenarios for a test that asks

    return getattr(request, "param", None) or SCENARIOS[PLAIN]


@pytest.fixture
def nosync_call_context(request: pytest.FixtureRequest) -> CallContext:
    """Where and how the suite calls pipelines: the backend's device (or --nosync-device), dtype and steps."""
    return _session(request).suite.call_context


@pytest.fixture
def nosync_pipeline(request: pytest.FixtureRequest, nosync_target: Target, nosync_scenario: Scenario) -> Iterator[Any]:
    """The target's pipeline on the suite's device and dtype, with the test's scenario on, built once per session (a
    scenario that does not apply skips the test; one that raised leaves the pipeline as it was, and the checks report
    the raise). The test runs inside what the scenario's calls need (an attention backend's process-wide default)."""
    from ..suite.scenarios import calls_context  # plugin cheap when off: diffusers for a test that asks

    suite = _session(request).suite
    ctx = suite.call_context
    pipe = suite.prepared(nosync_target, ctx.device, ctx.dtype, nosync_scenario).pipe
    with calls_context(nosync_scenario):
        yield pipe


@pytest.fixture
def nosync_check(
    request: pytest.FixtureRequest, nosync_target: Target, nosync_scenario: Scenario, nosync_pipeline: Any
) -> Callable[[str], Report]:
    """Run one of the suite's checks on the test's target pipeline (with its scenario) and return its Report."""
    suite = _session(request).suite
    return lambda check: suite.check(request.node, nosync_target, nosync_scenario, check)


@pytest.fixture
def nosync_step_metrics(
    request: pytest.FixtureRequest, nosync_target: Target, nosync_scenario: Scenario, nosync_pipeline: Any
) -> Callable[[Any], Report]:
    """Measure the target's step metrics, timed through pytest-benchmark's `benchmark` fixture (given by the test),
    and judge them against the run loaded by --benchmark-compare (see plugin.benchmark)."""
    suite = _session(request).suite
    return lambda benchmark: suite.step_metrics(request.node, nosync_target, nosync_scenario, benchmark)


@pytest.fixture
def nosync_guard_kwargs(request: pytest.FixtureRequest) -> Callable[..., dict[str, Any]]:
    """The keyword arguments of a guard in this test for (check, target): its GuardOptions (with the baseline's
    matcher scoped to them) and the report's names. `fixed`: GuardOptions fields the case decides (denoiser, ...).

        regressions.unipc_case(config, device, **nosync_guard_kwargs("regression:unipc", "UniPCMultistepScheduler"))
    """
    from ..ids import plain_nodeid  # plugin cheap when off: only a test that takes the fixture

    session = _session(request)

    def kwargs(check: str, target: str = "", **fixed: Any) -> dict[str, Any]:
        guard = session.guard_options(request.node, check, target, **fixed)
        return {"options": guard, "test_id": plain_nodeid(request.node.nodeid), "check": check, "target": target}

    return kwargs


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # before xdist's own answer (the CPU count)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    # plugin cheap when off: xdist's helpers only for `-n auto`, asked before any configure (no session yet)
    from . import xdist

    return xdist.auto_workers(config)
