"""Every diffusers pipeline under the gate: nosync checks beside each pipeline tester class of a diffusers checkout.

Collected with --nosync, a test module's tester class (census.testers) gets one item per check of the suite,
`<module>::<TestClass>::nosync[<check>]`, marked `gpu` and `nosync`: `pytest tests/pipelines -m gpu --nosync` runs
them and none of diffusers' own tests (unmarked, unchanged, and untouched without --nosync); `-k nosync` selects them
among the others. Each item runs the same check as the suite's test of a target (suite.checks.run_check: one guarded
call, the same detectors, baseline, reports and traces) on the tester's pipeline, built once per run from its
`get_dummy_components()` and calibrated by one plain call (census.building: this module is its pytest side). A
tester that cannot be driven here is skipped with its reason and counted; the summary says the coverage. Where the hub
cannot be reached, the repositories the testers load are stood in for by repositories built in code
(census.hub_standins), and the run says so. After collection, each pipeline class diffusers exports that no collected
tester names gets the same items under the sibling tester it is checked through (census.untested; a ModularPipeline
class, under a modular config of its family: census.modular_untested),
`<module>::<Sibling>::<PipelineClass>::nosync[<check>]`, and the summary counts the exported classes checked.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Generator
from functools import partial
from typing import TYPE_CHECKING, Any

import pytest

from .. import ids
from ..census import coverage
from ..census.changed import ChangesError, recorded, repo_of, roots_of, select
from ..census.outcomes import Coverage, add_exports, outcome_of, skipped, tested_class_name
from ..findings import Report
from ..scenarios import PLAIN
from .census_shard import candidate_modules

if TYPE_CHECKING:
    from ..census.building import Built
    from ..census.changed import Selection
    from ..census.hub_standins import Installation
    from ..census.testers import Tester
    from ..detection.guard_options import GuardOptions
    from ..scenarios import Scenario
    from ..suite.shared_traces import TraceStore
    from .parts import CensusRun

HEADER_KEY = "nosync_census_header"  # in an xdist worker's output
EXPORTS_KEY = "nosync_census_exports"  # the same: the exported pipeline classes, and why a run has no check of them
DEPRECATED_KEY = "nosync_census_deprecated"  # the same: those of them diffusers deprecates
OUTCOME_KEY = "nosync_census"  # a check's outcome, in its test report's user properties

# Makes an item's driver (census.testers.Tester or a subclass): chosen at collection, where the kind of row is known (a
# tester class, a modular config, an untested class through its siblings); made when its first item runs.
Driver = Callable[[], "Tester"]


class TesterCheck(pytest.Item):
    """One check of one tester class's pipeline."""

    def __init__(
        self, *, tester_class: Any, driver: Driver, check: str, scenario: Scenario, census: Census, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.tester_class = tester_class
        self.driver = driver  # makes the tester's driver, once an item of it runs (census.building.Built)
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
        return tested_class_name(inspect.getattr_static(self.tester_class, "pipeline_class", None))

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
        return self.path, line, str(ids.CensusId(self.class_id, self.check, self.scenario.name))


class UntestedClass(pytest.Collector):
    """An exported pipeline class no tester names, under the sibling tester it is checked through (census.untested):
    its checks' parent, so that their ids and `-k` name it."""

    def collect(self) -> list[Any]:
        return []  # its checks are added with the run's final collection (Census.pytest_census_untested)


class Census:
    """Registered by the session: adds the items, drives them, installs the hub stand-ins, says the coverage."""

    def __init__(self, session: CensusRun) -> None:
        self.session = session
        self._built: dict[type, Built] = {}
        self._claimed: dict[Any, set[Any]] = {}  # module collector → providers whose checks it already has
        self._testers: dict[type, pytest.Class] = {}  # each classic tester class given checks → its node
        self._modular: dict[type, pytest.Class] = {}  # each modular tester config's class given checks → its node
        self._named: set[str] = set()  # the pipeline classes the tester classes given checks name, modular ones too
        self.hub: Installation | None = None
        self.selection: Selection | None = None  # what --nosync-changed selected
        self.coverage = Coverage()  # each check's outcome, and the test modules that could not be imported
        self.header: list[str] = []  # what the run checks, said after collection
        self.workers_header: list[str] = []  # the same, as xdist's workers said it (the controller collects nothing)
        self._traces: TraceStore | None = None  # the graph verdicts shared by key (--nosync-share-traces)

    # ---- collection ----------------------------------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_pycollect_makeitem(self, collector: pytest.Collector, name: str, obj: Any) -> Generator[None, Any, Any]:
        result = yield
        if not inspect.isclass(obj) or (
            self.session.shards is not None and self.session.shards.elsewhere(collector.path)
        ):
            return result
        # a run whose modules hold no tester class does without torch and the suite
        from ..census import modular, testers

        if testers.is_pipeline_tester(obj):
            source = testers.provider(obj)
        elif modular.is_modular_tester(obj):  # a Modular Diffusers tester config: one target per config class
            source = modular.provider(obj)
        else:
            return result
        # a modular config is driven from its blocks, also one that has a classic tester's methods as well
        driver = partial(modular.ModularTester if modular.is_modular_tester(obj) else testers.Tester, obj)
        nodes = result if isinstance(result, list) else [result]
        claimed = self._claimed.setdefault(collector, set())
        for node in nodes:
            if isinstance(node, pytest.Class) and source not in claimed:
                claimed.add(source)
                self._add_checks(node, obj, driver)
                if testers.is_pipeline_tester(obj):
                    self._testers.setdefault(obj, node)
                else:
                    self._modular.setdefault(obj, node)
                named = tested_class_name(inspect.getattr_static(obj, "pipeline_class", None))
                self._named.update([named] if named else [])
        return result

    def _add_checks(self, node: pytest.Class, tester_class: type, driver: Driver) -> None:
        collect = node.collect

        def with_checks() -> list[Any]:
            return list(collect()) + self._checks(node, tester_class, driver)

        node.collect = with_checks  # type: ignore[method-assign]

    def _checks(self, parent: pytest.Collector, tester_class: Any, driver: Driver) -> list[TesterCheck]:
        return [
            TesterCheck.from_parent(
                parent,
                name=ids.item_name(check, scenario.name),
                tester_class=tester_class,
                driver=driver,
                check=check,
                scenario=scenario,
                census=self,
            )
            for scenario in self.session.suite.scenarios()
            for check in self.session.settings.pipeline_checks
        ]

    # before -k, -m and --deselect choose among the items (and --nosync-changed, trylast, among the classes)
    @pytest.hookimpl(specname="pytest_collection_modifyitems", tryfirst=True)
    def pytest_census_untested(self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
        """The checks of the exported pipeline classes no collected tester or modular config names, each under the
        sibling it is checked through (census.untested.plan, census.modular_untested.plan), and every exported class's
        reason where the run has no check of it."""
        testers = {**self._testers, **self._modular}
        if not testers:
            return
        # a census of diffusers' testers only: it imports every pipeline class
        from ..census import modular_untested, standin_testers, untested

        pipelines = [inspect.getattr_static(cls, "pipeline_class", None) for cls in testers]
        exported = untested.census_exports(filter(inspect.isclass, pipelines), [n.path for n in testers.values()])
        if exported is None:
            return
        folders = {node.path.parent for node in testers.values()}
        # and the folders of the other shards' modules: a class one of them tests is not this shard's untested one
        shards = self.session.shards
        folders |= {(config.rootpath / module).parent for module in (shards.ignored if shards is not None else ())}
        named = self._named | untested.named_in(folders)
        # every test module the paths name, collected or not (a shard's others): each shard chooses another family's
        # sibling module as one run would (census.untested.plan)
        modules = [config.rootpath / m for m in candidate_modules(config)]
        classic = untested.plan(exported, self._testers, named, modules, standin_testers.TESTERS)
        planned = modular_untested.plan(classic, self._modular, named, self._testers)
        for entry in planned.untested:
            parent = UntestedClass.from_parent(testers[entry.parent], name=entry.name)
            for item in self._checks(parent, entry, entry.driver):
                item.extra_keyword_matches.add(ids.UNTESTED)  # `-k untested` selects them
                if _asked_for(item, config):
                    items.append(item)
        reasons = {e.name: planned.reasons.get(e.name, "") for e in exported}
        add_exports(self.coverage, reasons, [e.name for e in exported if e.deprecated])

    @pytest.hookimpl(tryfirst=True)  # before the terminal reporter says what was collected (and asks us)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        census = any(isinstance(item, TesterCheck) for item in session.items)
        if self.hub is None and census:
            # only a run with census items builds stand-ins (transformers' and diffusers' model classes)
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
        """What the run checks (census.coverage.header)."""
        checks = [item for item in items if isinstance(item, TesterCheck)]
        classes = [item.class_id for item in checks]
        return coverage.header(self.selection, classes, len(checks), self.session.settings.dtype, self.hub)

    # Under pytest-xdist the workers collect and the controller prints: the header travels back with the workers.
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[HEADER_KEY] = self.header
            workeroutput[EXPORTS_KEY] = self.coverage.exports
            workeroutput[DEPRECATED_KEY] = sorted(self.coverage.deprecated)

    @pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook, on the controller
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        for line in getattr(node, "workeroutput", {}).get(HEADER_KEY, []):
            if line not in self.workers_header:  # every worker collected the same
                self.workers_header.append(line)
        output = getattr(node, "workeroutput", {})
        add_exports(self.coverage, output.get(EXPORTS_KEY, {}), output.get(DEPRECATED_KEY, []))

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.hub is not None:
            self.hub.restore()
            self.hub = None

    # ---- running -------------------------------------------------------------------------------------------------
    def run(self, item: TesterCheck) -> Report:
        """The item's check on its tester's pipeline, with the item's scenario (census.building.run, given what it
        needs of the run); what cannot be checked here is skipped with its reason."""
        # the census's driving imports torch and the suite: only once a census item runs
        from ..census.building import Built, NotChecked, TraceStore, run

        def options(target: str, denoiser: str) -> GuardOptions:
            return self.session.guard_options(item, item.check, target, item.scenario.name, denoiser=denoiser)

        built = self._built.setdefault(item.tester_class, Built(item.driver))
        # the code the tester's plain pipeline runs, recorded for a later --nosync-changed (census.changed)
        recording = partial(recorded, getattr(self.session.config, "cache", None), item.class_id, item.path)
        try:
            return run(built, item.scenario, item.check, ctx=self.session.suite.check_context(item.check),
                       dtype=self.session.settings.dtype, options=options, recording=recording,
                       test_id=item.check_id, share=self._shared_traces(TraceStore))  # fmt: skip
        except NotChecked as exc:
            pytest.skip(str(exc))

    def _shared_traces(self, store: type[TraceStore]) -> TraceStore | None:
        """The run's store of graph verdicts (None with --nosync-share-traces=off): a directory beside the workers'
        temporary directories, which every xdist worker of the run shares (in one process, its own temporary one)."""
        if self.session.settings.share_traces != "on":
            return None
        if self._traces is None:
            base = self.session.config._tmp_path_factory.getbasetemp()
            run_root = base.parent if hasattr(self.session.config, "workerinput") else base
            self._traces = store(run_root / "nosync-shared-traces")
        return self._traces

    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        # A tester's checks run one after another (--dist loadgroup keeps them on one worker): after the last, its
        # pipelines and test instance go, so a run holds one tiny pipeline at a time rather than every one it built.
        # A later check of the same class (another order) builds and calibrates it again.
        if not isinstance(item, TesterCheck) or (built := self._built.get(item.tester_class)) is None:
            return
        if getattr(nextitem, "tester_class", None) is not item.tester_class:
            built.release()
        elif item.scenario.name != PLAIN and nextitem.scenario.name != item.scenario.name:
            # A class's checks come scenario by scenario: a scenario's pipeline (built afresh) goes when its last check
            # ran. Kept to the class's end, six of them took a worker past 19 GB (BriaFibo on the CPU) and the OOM
            # killer took it.
            built.release_scenario(item.scenario.name)

    # ---- coverage ------------------------------------------------------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Where results arrive (this process, or the xdist controller): each check's outcome, as its item said it.
        parsed = ids.parse(report.nodeid)
        if parsed is None:
            return
        said = next((value for name, value in report.user_properties if name == OUTCOME_KEY), None)
        outcome = coverage.outcome_of_report(report.when, report.skipped, report.failed, report.longrepr, said)
        if outcome is not None:
            self.coverage.add(parsed.tester, parsed.column, outcome)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed and report.nodeid.endswith(".py"):  # a test module that could not be imported
            coverage.add_import_failure(self.coverage, report.nodeid, report.longrepr)

    @pytest.hookimpl(trylast=True)  # in the nosync section, after the session's lines
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for line in self.workers_header:
            terminalreporter.write_line(line)
        for line in self.coverage.summary():
            terminalreporter.write_line(line, yellow=line.startswith("  "), red="could not be imported" in line)


def _asked_for(item: pytest.Item, config: pytest.Config) -> bool:
    """Whether the run's arguments ask for `item` (added after collection, which selected by them): a path holding its
    module, or a node id above it."""
    module = item.getparent(pytest.Module)
    if module is None or not config.args:
        return True
    below = [node.name for node in item.listchain()[item.listchain().index(module) + 1 :]]
    for arg in config.args:
        path = (config.invocation_params.dir / ids.node_path(arg)).resolve()
        names = ids.names_below_file(arg)
        if (item.path == path or path in item.path.parents) and below[: len(names)] == names:
            return True
    return False
