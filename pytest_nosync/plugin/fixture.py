"""What the `nosync` fixture gives a test: guards whose checks and policy come from the test's `nosync` marker and
the command line, and the reports they attach to the test. Without --nosync there is no session: the guards are
disarmed and the block runs as plain code."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from ..detection.guard_options import GuardOptions, split_options
from ..findings import Report
from ..ids import plain_nodeid

if TYPE_CHECKING:
    from ..detection.guard import Guard
    from .parts import FixtureRun


BODY_GUARD = pytest.StashKey["Guard"]()  # a marked test's body guard, while the body runs


class _WithinBody:
    """`nosync.guard(pipe)` in a body the marker guards already: the body's guard, given the pipeline (its steps
    become the body's), and one report."""

    def __init__(self, body: Guard, pipeline: Any) -> None:
        self.body = body
        self.pipeline = pipeline

    def __enter__(self) -> Guard:
        if self.pipeline is not None and self.body.pipeline is None:
            self.body.adopt(self.pipeline)
        return self.body

    def __exit__(self, *exc: object) -> bool:
        return False


class NosyncFixture:
    def __init__(self, item: pytest.Item, session: FixtureRun | None) -> None:
        self.item = item
        self._session = session

    @property
    def enabled(self) -> bool:
        return self._session is not None

    def guard(self, pipeline: Any = None, **overrides: Any) -> Guard:
        """A guard for one block; its report is attached to the test when the block exits. `overrides`: GuardOptions
        fields, and the Guard's own arguments."""
        # a test that takes the fixture and opens no block does without torch and detectors
        from ..detection.guard import Guard

        body = self.item.stash.get(BODY_GUARD, None)
        if body is not None:
            if overrides:
                pytest.fail(
                    "the nosync marker guards this test's body already, with its checks and options: give them to "
                    f"the marker, not to nosync.guard() ({', '.join(overrides)})",
                    pytrace=False,
                )
            return _WithinBody(body, pipeline)  # type: ignore[return-value]
        fields, rest = split_options(overrides)
        test_id = plain_nodeid(self.item.nodeid)
        if self._session is None:
            return Guard(pipeline, replace(GuardOptions(), **fields), test_id=test_id, enabled=False, **rest)
        # the baseline's scope: the checks it runs, as GuardOptions reads them (a single name is one check)
        check = ",".join(GuardOptions(checks=fields["checks"]).checks) if "checks" in fields else ""
        options = replace(self._session.guard_options(self.item, check), **fields)
        return Guard(pipeline, options, test_id=test_id, on_finish=self.add_report, **rest)

    def add_report(self, report: Report) -> None:
        """Attach a report to the test (a failing one fails it); without --nosync reports are dropped."""
        if self._session is not None:
            self._session.add_report(self.item, report)

    @property
    def reports(self) -> list[Report]:
        return self._session.reports_of(self.item) if self._session is not None else []
