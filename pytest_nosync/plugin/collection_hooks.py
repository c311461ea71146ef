"""The checking run's collection hooks: the suite's directory and modules collected, the targets and scenarios a test
is parametrized by, the suite's checks deselected, the order xdist hands tests out in, and the line saying which
scenarios the marked tests take."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..option_table import OptionError
from . import options as table
from . import suite_collection, xdist
from .session import NosyncSession


class CollectionHooks:
    """Registered by plugin.start; the state they keep is the session's."""

    def __init__(self, session: NosyncSession) -> None:
        self.session = session

    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_directory(self, path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        return suite_collection.directory(path, parent)

    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makemodule(self, module_path: Path, parent: pytest.Collector) -> pytest.Module | None:
        return suite_collection.module(module_path, parent)

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        session = self.session
        if "nosync_target" in metafunc.fixturenames:
            session.suite.generate_target_params(metafunc)
            return
        marker = metafunc.definition.get_closest_marker("nosync")
        if marker is None:
            return
        if "scenarios" in marker.kwargs:  # a marked test of the user's own pipeline names its scenarios: they win
            try:
                scenarios = table.parse_marker((), {"scenarios": marker.kwargs["scenarios"]})["scenarios"]
            except OptionError:
                return  # a usage error naming the test once collection ends (plugin's pytest_collection_modifyitems)
            session.scenario_tests["marker"].add(metafunc.definition.nodeid)
        elif session.settings.scenarios:  # --nosync-scenarios covers a marked test's pipeline as the marker's list does
            scenarios = session.settings.scenarios
            session.scenario_tests["option"].add(metafunc.definition.nodeid)
        else:
            return
        if "nosync_scenario" not in metafunc.fixturenames:
            metafunc.fixturenames.append("nosync_scenario")
        metafunc.parametrize("nosync_scenario", [pytest.param(s, id=s.name) for s in scenarios], indirect=True)

    def pytest_report_collectionfinish(self, config: pytest.Config, items: list[pytest.Item]) -> list[str]:
        """Which scenarios the marked tests of the user's own pipelines take: --nosync-scenarios's, or their marker's
        own list, which wins."""
        session = self.session
        option, own = len(session.scenario_tests["option"]), len(session.scenario_tests["marker"])
        if not session.settings.scenarios or not (option or own):
            return []
        names = ",".join(s.name for s in session.settings.scenarios)
        line = f"nosync: --nosync-scenarios={names} applies to {option} marked test(s) of their own pipelines"
        return [line + (f"; {own} name their own (the marker's scenarios= wins)" if own else "")]

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.session.suite.deselect_checks(items)
        cache = getattr(self.session.config, "cache", None)
        if cache is not None and xdist.distributing(self.session.config):
            items[:] = xdist.longest_first(items, cache.get(xdist.COSTS_KEY, {}))
