"""The checking run's pytest-xdist hooks, answered on the controller: each worker's GPU pinned in its spec, the run's
backend and baseline handed to each worker, and the suite's scheduler under --dist loadgroup (plugin.xdist has the
functions; these only hand them the session's state)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from . import xdist
from .session import NosyncSession


class XdistHooks:
    """Registered by plugin.start; optional hooks, so a run without pytest-xdist registers them as well."""

    def __init__(self, session: NosyncSession) -> None:
        self.session = session

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_setupnodes(self, config: pytest.Config, specs: list[Any]) -> None:
        sharing = getattr(config.pluginmanager.get_plugin("nosync-gpu-sharing"), "sharing", None)
        xdist.pin_specs(specs, self.session.settings.share_gpus, renumbered=sharing is not None and sharing.renumbered)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[xdist.BACKEND_KEY] = self.session.settings.backend
        if self.session.baseline is not None:
            node.workerinput[xdist.BASELINE_KEY] = os.path.abspath(self.session.baseline.path)

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if config.getvalue("dist") != "loadgroup":
            return None  # xdist's own
        return xdist.make_scheduler(config, log, [t.name for t in self.session.suite.selected()])
