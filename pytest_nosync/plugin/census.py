"""Every diffusers pipeline under the gate: nosync checks beside each pipeline tester class of a diffusers checkout.

Collected with --nosync, a test module's tester class (census.testers) gets one item per check of the suite,
`<module>::<TestClass>::nosync[<check>]`, marked `gpu` and `nosync`: `pytest tests/pipelines -m gpu --nosync` runs
them and none of diffusers' own tests (unmarked, unchanged, and untouched without --nosync); `-k nosync` selects them
among the others. Each item runs the same check as the suite's test of a target (suite.checks.run_check: one guarded
call, the same detectors, baseline, reports and traces) on the tester's pipeline, built once per run from its
`get_dummy_components()` and calibrated by one plain call. A tester that cannot be driven here is skipped with its
reason and counted; the summary says the coverage. Where the hub cannot be reached, the repositories the testers
load are stood in for by repositories built in code (census.hub_standins), and the run says so.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
from collections.abc import Generator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pytest

from ..census import ids
from ..census.changed import recorded
from ..census.outcomes import CheckOutcome, Coverage, Verdict, import_error, outcome_of, skipped
from ..findings import Report
from ..scenarios import PLAIN

if TYPE_CHECKING:
    from ..census.changed import Selection
    from ..census.hub_standins import Installation
    from ..census.testers import Tester
    from ..scenarios import Scenario
    from ..suite.pipelines import Prepared
    from .session import NosyncSession

HEADER_KEY = "nosync_census_header"  # in an xdist worker's output
OUTCOME_KEY = "nosync_census"  # a check's outcome, in its test report's user properties


class TesterCheck(pytest.Item):
    """One check of one tester class's pipeline."""

    def __init__(self, *, tester_class: type, check: str, scenario: Scenario, census: Census, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tester_class = tester_class
        self.check = check
        self.scenario = scenario
        self.census = census
        # Kept as collected: pytest-xdist's loadgroup appends `@<group>` to the node id in its workers.
        self.check_id = self.nodeid
        self.class_id = ids.parse(self.nodeid).tester  # type: ignore[union-attr]  # named by ids.item_name
        for mark in (pytest.mark.gpu, pytest.mark.nosync, pytest.mark.xdist_group(self.class_id)):
            self.add_marker(mark)

    @property
    def pipeline_name(self) -> str:
        return getattr(inspect.getattr_static(self.tester_class, "pipeline_class", None), "__name__", "")

    def runtest(self) -> None:
        try:
            report = self.census.run(self)
        except pytest.skip.Exception as exc:  # not checkable here: counted with its reason
            reason = str(exc.msg).removeprefix("not checked: ").removeprefix("not checkable: ")
            self.user_properties.append((OUTCOME_KEY, skipped(reason, self.pipeline_name).to_dict()))
            raise
        self.user_properties.append((OUTCOME_KEY, outcome_of(report, self.pipeline_name).to_dict()))
        self.census.session.add_report(self, report)
        self.census.session.verdict([report])

    def reportinfo(self) -> tuple[Any, int | None, str]:
        try:
            line = inspect.getsourcelines(self.tester_class)[1] - 1  # 0-based, as pytest's own items give it
        except (OSError, TypeError):
            line = 0
        return self.path, line, f"{self.class_id}::{self.name}"


@dataclass
class _Built:
    """A tester's state in this run: its driver, and its pipeline per device (or why it cannot be driven)."""

    tester: Tester | None = None
    pipelines: dict[tuple, Prepared] = field(default_factory=dict)  # (device, scenario, its settings) → pipeline
    not_drivable: str = ""
    error: BaseException | None = None  # the plain call raised: every check reports it as its finding


class Census:
    """Registered by the session: adds the items, drives them, installs the hub stand-ins, says the coverage."""

    def __init__(self, session: NosyncSession) -> None:
        self.session = session
        self._built: dict[type, _Built] = {}
        self._claimed: dict[Any, set[Any]] = {}  # module collector → providers whose checks it already has
        self.hub: Installation | None = None
        self.selection: Selection | None = None  # what --nosync-changed selected
        self.coverage = Coverage()  # each check's outcome, and the test modules that could not be imported
        self.header: list[str] = []  # what the run checks, said after collection
        self.workers_header: list[str] = []  # the same, as xdist's workers said it (the controller collects nothing)

    # ---- collection ----------------------------------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_pycollect_makeitem(self, collector: pytest.Collector, name: str, obj: Any) -> Generator[None, Any, Any]:
        result = yield
        if not inspect.isclass(obj):
            return result
        from ..census import testers

        if not testers.is_pipeline_tester(obj):
            return result
        nodes = result if isinstance(result, list) else [result]
        source = testers.provider(obj)
        claimed = self._claimed.setdefault(collector, set())
        for node in nodes:
            if isinstance(node, pytest.Class) and source not in claimed:
                claimed.add(source)
                self._add_checks(node, obj)
        return result

    def _add_checks(self, node: pytest.Class, tester_class: type) -> None:
        collect = node.collect

        def with_checks() -> list[Any]:
            own = list(collect())
            return own + [
                TesterCheck.from_parent(
                    node,
                    name=ids.item_name(check, scenario.name),
                    tester_class=tester_class,
                    check=check,
                    scenario=scenario,
                    census=self,
                )
                for scenario in self.session.suite.scenarios()
                for check in self.session.settings.pipeline_checks
            ]

        node.collect = with_checks  # type: ignore[method-assign]

    @pytest.hookimpl(tryfirst=True)  # before the terminal reporter says what was collected (and asks us)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        census = any(isinstance(item, TesterCheck) for item in session.items)
        if self.hub is None and census:
            from ..census import hub_standins

            self.hub = hub_standins.install()  # only where the hub cannot be reached; never downloads
        self.header = self._header(session.items)

    @pytest.hookimpl(trylast=True)  # on the run's final selection (-k, -m)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if self.session.settings.changed is None:
            return
        checks = [item for item in items if isinstance(item, TesterCheck)]
        if not checks:
            return
        from ..census.changed import ChangesError, repo_of, roots_of, select

        ids = list(dict.fromkeys(item.class_id for item in checks))
        try:
            first = checks[0].path
            self.selection = select(ids, self.session.settings.changed, repo_of(first), roots_of(first), config.cache)
        except ChangesError as exc:
            raise pytest.UsageError(f"--nosync-changed: {exc}") from None
        dropped = set(self.selection.deselected)
        deselected = [item for item in checks if item.class_id in dropped]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = [item for item in items if not (isinstance(item, TesterCheck) and item.class_id in dropped)]

    def pytest_report_collectionfinish(self, config: pytest.Config, items: list[pytest.Item]) -> list[str]:
        return self.header

    def _header(self, items: list[pytest.Item]) -> list[str]:
        """What the run checks: the classes, the stand-ins, what --nosync-changed selected and why."""
        checks = [item for item in items if isinstance(item, TesterCheck)]
        lines = self.selection.lines() if self.selection is not None else []
        if not checks:
            return lines
        lines += [
            f"nosync: {len({i.class_id for i in checks})} pipeline tester class(es), {len(checks)} check(s), "
            f"in {self.session.settings.dtype or 'float32'}"
        ]
        hub = self.hub
        if hub is not None and hub.active:
            lines.append(
                f"nosync: the hub cannot be reached: {len(hub.stood_in)} repositories the testers load are stood in "
                "for by tiny ones built in code (census.hub_standins; nothing is downloaded)"
            )
        return lines

    # Under pytest-xdist the workers collect and the controller prints: the header travels back with the workers.
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[HEADER_KEY] = self.header

    @pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook, on the controller
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        for line in getattr(node, "workeroutput", {}).get(HEADER_KEY, []):
            if line not in self.workers_header:  # every worker collected the same
                self.workers_header.append(line)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.hub is not None:
            self.hub.restore()
            self.hub = None

    # ---- running -------------------------------------------------------------------------------------------------
    def run(self, item: TesterCheck) -> Report:
        """The item's check on its tester's pipeline, with the item's scenario (see the module docstring)."""
        from .. import devices
        from ..suite.pipelines import check
        from ..suite.scenarios import NotApplicable

        ctx = self._context()
        device = devices.for_checks(ctx.device, (item.check,))
        ctx = replace(ctx, device=device)
        built, prepared = self._prepared(item, ctx)
        tester = built.tester
        options = self.session.guard_options(item, item.check, tester.name, item.scenario.name,
                                             denoiser=self._denoiser(built))  # fmt: skip
        if prepared.error is None:
            _skip_beyond_fixed_steps(tester, item.check, prepared.pipe, ctx.steps)
        target = tester.target()
        try:
            report = check(prepared, item.check, lambda pipe: target.kwargs_by_steps(pipe, ctx), options,
                           steps=ctx.steps, test_id=item.check_id, target=target.name)  # fmt: skip
        except NotApplicable as exc:  # a call showed the scenario has no support for the pipeline's inputs
            pytest.skip(f"not checkable: {exc}")
        report.metrics["pipeline"] = target.pipeline_class
        report.metrics["denoiser"] = target.denoiser
        return report

    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        # A tester's checks run one after another (--dist loadgroup keeps them on one worker): after the last, its
        # pipelines and test instance go, so a run holds one tiny pipeline at a time rather than every one it built.
        # A later check of the same class (another order) builds and calibrates it again.
        if not isinstance(item, TesterCheck) or (built := self._built.get(item.tester_class)) is None:
            return
        if getattr(nextitem, "tester_class", None) is not item.tester_class:
            built.pipelines.clear()
            if built.tester is not None:
                built.tester.release()
        elif item.scenario.name != PLAIN and nextitem.scenario.name != item.scenario.name:
            # A class's checks come scenario by scenario: a scenario's pipeline (built afresh) goes when its last check
            # ran. Kept to the class's end, six of them took a worker past 19 GB (BriaFibo on the CPU) and the OOM
            # killer took it.
            for key in [key for key in built.pipelines if key[1] == item.scenario.name]:
                del built.pipelines[key]
            gc.collect()  # its hooks hold it in reference cycles; the heap collection left is frozen, so this is quick

    def _context(self) -> Any:
        """The suite's call context, in float32 unless --nosync-dtype says otherwise: the testers build their
        components for it, as their own tests run them."""
        import torch

        ctx = self.session.suite.call_context
        return ctx if self.session.settings.dtype else replace(ctx, dtype=torch.float32)

    @staticmethod
    def _denoiser(built: _Built) -> str:
        calibration = built.tester.calibration if built.tester is not None else None
        return calibration.denoiser if calibration is not None else "transformer"

    def _recording(self, item: TesterCheck) -> contextlib.AbstractContextManager[None]:
        """Record the code the tester's pipeline runs for a later --nosync-changed (census.changed.recorded)."""
        return recorded(getattr(self.session.config, "cache", None), item.class_id, item.path)

    def _prepared(self, item: TesterCheck, ctx: Any) -> tuple[_Built, Prepared]:
        """The tester's pipeline on ctx's device with the item's scenario (suite.pipelines: the suite's path). The
        plain one is built and calibrated first, once per run (a scenario's pipeline is built afresh, its calibration
        the plain one's); a tester that cannot be driven here, or a scenario that does not apply, is skipped with its
        reason."""
        from ..census.testers import NotDrivable, Tester, Uncallable
        from ..scenarios import SCENARIOS
        from ..suite import process_caches
        from ..suite.checks import warmed
        from ..suite.pipelines import Prepared, prepare
        from ..suite.targets.registry import assemble
        from ..suite.torch_defaults import torch_defaults

        tester_class = item.tester_class
        built = self._built.setdefault(tester_class, _Built())
        if built.not_drivable:
            pytest.skip(f"not checked: {built.not_drivable}")
        plain = (str(ctx.device), PLAIN, ())
        if plain not in built.pipelines and built.error is None:
            try:
                # built and calibrated under the checks' torch defaults: a module's determinism decides no call
                with self._recording(item), torch_defaults():
                    built.tester = built.tester or Tester(tester_class)
                    pipe = assemble(built.tester.pipeline_class, built.tester.components(), ctx.device, ctx.dtype)
                    # a class's checks start from empty class-level caches, whatever the worker built before; its
                    # scenarios' pipelines then add a few entries each, in the same order every run
                    process_caches.forget(pipe)
                    built.tester.prelude(pipe, ctx)
                    built.tester.calibrate(pipe, ctx)
                warmed(pipe)
                built.pipelines[plain] = Prepared(SCENARIOS[PLAIN], pipe)
            except NotDrivable as exc:
                built.not_drivable = str(exc)
                pytest.skip(f"not checked: {built.not_drivable}")
            except Uncallable as exc:
                built.error = exc.error
            except Exception as exc:  # the pipeline's own constructor or move raised: the checks' finding
                built.error = exc
        if built.error is not None:
            return built, Prepared(item.scenario, error=built.error)
        scenario = built.tester.documented(item.scenario)  # the parameters the tester sets for its pipeline
        key = (str(ctx.device), scenario.name, tuple(scenario.settings().items()))
        if key not in built.pipelines:
            tester = built.tester
            with torch_defaults():
                built.pipelines[key] = prepare(
                    lambda: assemble(tester.pipeline_class, tester.components(), ctx.device, ctx.dtype),
                    scenario,
                    self._denoiser(built),
                    ctx.device,
                    then=lambda pipe: tester.prelude(pipe, ctx),
                )
        prepared = built.pipelines[key]
        if prepared.not_applicable:
            pytest.skip(f"not checkable: {prepared.not_applicable}")
        return built, prepared

    # ---- coverage ------------------------------------------------------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Where results arrive (this process, or the xdist controller): each check's outcome, as its item said it.
        parsed = ids.parse(report.nodeid)
        if parsed is None:
            return
        said = next((value for name, value in report.user_properties if name == OUTCOME_KEY), None)
        if said is not None and report.when == "call":
            self.coverage.add(parsed.tester, parsed.column, CheckOutcome.from_dict(said))
        elif report.skipped and report.when == "setup":  # the tester class skips itself (a decorator, a mark)
            longrepr = report.longrepr
            reason = (longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)).removeprefix("Skipped: ")
            self.coverage.add(parsed.tester, parsed.column, skipped(f"the tester skips itself: {reason}"))
        elif report.failed and report.when in ("setup", "call"):  # the harness itself broke before any verdict
            why = str(report.longrepr).strip().splitlines()[-1:] or ["an error"]
            self.coverage.add(parsed.tester, parsed.column, CheckOutcome(Verdict.NOT_CHECKED, False, why[0][:200]))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        # A test module that could not be imported hides its testers: counted, with the error's last line.
        if report.failed and report.nodeid.endswith(".py"):
            error = import_error(str(report.longrepr))
            modules = self.coverage.import_failures.setdefault(error, [])
            if report.nodeid not in modules:
                modules.append(report.nodeid)

    @pytest.hookimpl(trylast=True)  # in the nosync section, after the session's lines
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for line in self.workers_header:
            terminalreporter.write_line(line)
        for line in self.coverage.summary():
            terminalreporter.write_line(line, yellow=line.startswith("  "), red="could not be imported" in line)


def _skip_beyond_fixed_steps(tester: Tester, check: str, pipe: Any, steps: int) -> None:
    """A check that needs more steps than the pipeline runs whatever num_inference_steps says is not checkable: a
    property of the pipeline (SanaSprint's SCM schedule is capped at two), skipped with that reason and counted."""
    from ..suite.checks import plan

    calibration = tester.calibration
    fixed = calibration.fixed_steps if calibration is not None else None
    needed = plan(check, pipe, steps)[0]
    if fixed is not None and fixed < needed:
        pytest.skip(  # the check's name and need left out: one reason for all of a class's checks it stops
            f"not checkable: {tester.pipeline_class.__name__} runs {fixed} denoising step(s) a call whatever "
            f"num_inference_steps asks ({calibration.fixed_because}), fewer than the check needs"
        )
