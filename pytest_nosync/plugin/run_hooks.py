"""The checking run's hooks around each test: the session's start, a test's setup (the emulation's CUDA mapping aimed
at its device), a marked test's body guarded with its scenario on, and its reports put in pytest's test report.

What imports torch (devices, the emulation, suite.scenarios and guarded_call) is imported inside the functions that
use it: plugin.start imports this module before the run's options are checked, and a usage error stays quick.
"""

from __future__ import annotations

import linecache
import sys
from collections.abc import Callable, Generator
from typing import Any

import pytest

from .. import ids, render
from ..scenarios import PLAIN
from . import benchmark, xdist
from .fixture import BODY_GUARD, NosyncFixture
from .session import NosyncSession


class RunHooks:
    """Registered by plugin.start. Under the emulation (and --nosync-map-cuda on) it maps code written for CUDA to the
    emulated device from its making to the run's end: the one global the run's hooks change."""

    def __init__(self, session: NosyncSession) -> None:
        self.session = session
        self._unmap_cuda = _map_cuda(session)

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        # Findings quote their lines and the baseline matches code by its text: a file edited since this process
        # last read it (pytest run in-process again, an editor's save between runs) is read afresh.
        linecache.checkcache()
        if self.session.role is not xdist.Role.WORKER:  # after pytest-benchmark's configure loaded the compared runs
            benchmark.check_usage(self.session.config, self.session.settings)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if self.session.unreachable:
            pytest.fail(self.session.unreachable, pytrace=False)
        if self._unmap_cuda is not None:
            from ..emulation import cuda_map  # imports torch: after option checks

            cuda_map.retarget(self.session.device_for(item))  # the plain CPU for a test that only checks graph breaks

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> Generator[None, Any, Any]:
        session = self.session
        guard = None
        if pyfuncitem.get_closest_marker("nosync") is not None:  # the body, whether or not the test takes `nosync`
            # The body; with a pipeline among the test's arguments, that pipeline's steps (guard.Guard's doc)
            pipeline = _pipeline_argument(pyfuncitem)
            if self._with_scenario(pyfuncitem, pipeline):
                # A test that takes the fixture draws its steps with its blocks: what the body does before them
                # (building a scheduler, its set_timesteps) is before the steps, as in a block of its own.
                blocks = "nosync" in pyfuncitem.fixturenames
                guard = NosyncFixture(pyfuncitem, session).guard(pipeline, whole_block=True, steps_later=blocks)
                pyfuncitem.stash[BODY_GUARD] = guard  # the `nosync` fixture's blocks are the body guard's
            else:  # the scenario raised: its error is the test's report, and the body does not run
                pyfuncitem.obj = _no_body
        if guard is None:
            result = yield
        else:
            from ..suite.scenarios import calls_context  # imports torch: after option checks

            try:
                with calls_context(session.scenario_of(pyfuncitem)), guard:  # the scenario's process-wide needs
                    result = yield
            finally:
                del pyfuncitem.stash[BODY_GUARD]
        session.verdict(session.reports_of(pyfuncitem))
        return result

    def _with_scenario(self, item: pytest.Function, pipeline: Any) -> bool:
        """Turn a marked test's scenario on for its pipeline before the body runs: skipped where it does not apply;
        False (its error reported) where turning it on raised. Each pipeline takes one scenario: a fixture that hands
        the same pipeline to two tests would check the second with both."""
        session = self.session
        scenario = session.scenario_of(item)
        if scenario.name == PLAIN:
            return True
        if pipeline is None:
            why = (f"scenario {scenario.name}: the test has no diffusers pipeline among its arguments to turn it on "
                   "for (a fixture that builds one)")  # fmt: skip
            marker = item.get_closest_marker("nosync")
            if marker is not None and "scenarios" not in marker.kwargs:  # --nosync-scenarios's: counted, not failed
                pytest.skip(f"not checkable: {why}")
            pytest.fail(why, pytrace=False)
        if pipeline in session.scenario_pipelines:
            pytest.fail(f"scenario {scenario.name}: this pipeline already has a scenario on: build a new one per test "
                        "(a function-scoped fixture)", pytrace=False)  # fmt: skip
        from ..detection import devices  # imports torch: after option checks
        from ..suite.guarded_call import error_report  # imports torch: after option checks
        from ..suite.pipelines import prepare  # imports torch: after option checks

        options = session.guard_options(item)
        session.scenario_pipelines.add(pipeline)
        # the suite's one path to a pipeline, the test's own already built (later tests of the process keep the
        # attention backend they had: suite.scenarios.kept_process_wide)
        device = devices.execution_device(session.settings.backend)
        prepared = prepare(lambda: pipeline, scenario, options.denoiser, device)
        if prepared.not_applicable:
            pytest.skip(f"not checkable: {prepared.not_applicable}")
        if prepared.error is not None:
            session.add_report(item, error_report(prepared.error, options, test_id=ids.plain_nodeid(item.nodeid)))
            return False
        return True

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Generator[None, Any, Any]:
        report = yield
        if call.when == "call":
            session = self.session
            for r in session.reports_of(item):
                r.metrics.setdefault("baseline", session.baseline.path if session.baseline is not None else None)
                report.user_properties.append(("nosync", r.to_dict()))
                if r.findings and r.passed:
                    report.sections.append((f"nosync {r.check}", render.render_report(r, session.root)))
        return report

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self._unmap_cuda is not None:
            self._unmap_cuda()
            self._unmap_cuda = None


def _map_cuda(session: NosyncSession) -> Callable[[], None] | None:
    """Under the emulation (and --nosync-map-cuda on), code written for CUDA runs on the emulated device for the
    run; the returned function undoes it."""
    if session.settings.backend != "emulate" or session.settings.map_cuda != "on":
        return None
    from ..detection import devices  # imports torch: after option checks
    from ..emulation import cuda_map  # imports torch: after option checks

    return cuda_map.install(devices.execution_device("emulate"))


def _no_body(**arguments: Any) -> None:
    """A marked test's body when its scenario could not be turned on: nothing of it ran."""


def _pipeline_argument(item: pytest.Function) -> Any:
    """The diffusers pipeline among a test's arguments, if there is one (diffusers is not imported for the question:
    a pipeline exists only where it is). Reading `diffusers.DiffusionPipeline` also imports diffusers' pipeline
    module before the body's guard begins, which the body's step drawing needs when the body builds its pipeline."""
    diffusers = sys.modules.get("diffusers")
    base = getattr(diffusers, "DiffusionPipeline", None) if diffusers is not None else None
    if base is None:
        return None
    return next((value for value in item.funcargs.values() if isinstance(value, base)), None)
