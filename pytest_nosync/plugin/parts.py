"""What the run's parts (the suite run, the census, the `nosync` fixture, the graph helpers) may ask of the run: small
typed protocols, so that each names what it needs rather than the NosyncSession that answers them all (the session
imports the parts to build them; a part importing the session back was an import cycle, type-only or not).

A protocol per need: a test's options (RunOptions), a test's reports (ItemReports), where and how the suite calls
pipelines (SuiteCalls); the parts' own protocols join the needs they have.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    import pytest
    import torch

    from ..detection.guard_options import GuardOptions
    from ..findings import Report
    from ..option_table import Settings
    from ..scenarios import Scenario
    from ..suite.targets.base import CallContext, Target


class RunOptions(Protocol):
    """The run's settings and pytest config, and a test's GuardOptions (the session's `guard_options`)."""

    @property
    def config(self) -> pytest.Config: ...

    @property
    def settings(self) -> Settings: ...

    def guard_options(
        self, item: pytest.Item, check: str = "", target: str = "", scenario: str = "", **fixed: Any
    ) -> GuardOptions: ...


class ItemReports(Protocol):
    """A test's reports: attached to it, read back, and the verdict on them (a failing one fails the test)."""

    def add_report(self, item: pytest.Item, report: Report) -> None: ...

    def reports_of(self, item: pytest.Item) -> list[Report]: ...

    def verdict(self, reports: list[Report]) -> None: ...


class SuiteCalls(Protocol):
    """Where and how the suite calls pipelines (and where a given check runs), its scenarios, and the plain pipelines
    this run has built."""

    @property
    def call_context(self) -> CallContext: ...

    def check_context(self, check: str) -> CallContext: ...

    def scenarios(self) -> tuple[Scenario, ...]: ...

    def built(self, target: Target, device: torch.device, dtype: torch.dtype) -> Any: ...


class FixtureRun(RunOptions, ItemReports, Protocol):
    """What the `nosync` fixture asks: a guard's options, and the test's reports."""


class RunWithSuite(RunOptions, Protocol):
    """What the graph helpers ask: a test's options, and the suite's calls."""

    @property
    def suite(self) -> SuiteCalls: ...


class ShardView(Protocol):
    """What the census asks of the run's shard: the other shards' test modules, and whether a module is one."""

    @property
    def ignored(self) -> set[str]: ...

    def elsewhere(self, path: Path) -> bool: ...


class CensusRun(RunWithSuite, ItemReports, Protocol):
    """What the census asks: a check's options, the suite's calls, the check's reports, and the run's shard."""

    @property
    def shards(self) -> ShardView | None: ...
