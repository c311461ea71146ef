"""What a census run covers, said twice: after collection, the header (what it checks: the classes, the stand-ins,
what --nosync-changed selected), and as results arrive, each check's outcome read from the parts of its test report
(added up in census.outcomes.Coverage, summarized at the run's end)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .outcomes import CheckOutcome, Coverage, Verdict, import_error, skipped

if TYPE_CHECKING:
    from .changed import Selection
    from .hub_standins import Installation


def header(selection: Selection | None, class_ids: Iterable[str], checks: int, dtype: str | None,
           hub: Installation | None) -> list[str]:  # fmt: skip
    """What the run checks: `checks` checks of the classes `class_ids`, in `dtype`, the hub's stand-ins, what
    --nosync-changed selected and why."""
    lines = selection.lines() if selection is not None else []
    if not checks:
        return lines
    lines += [f"nosync: {len(set(class_ids))} pipeline tester class(es), {checks} check(s), in {dtype or 'float32'}"]
    if hub is not None and hub.active:
        lines.append(
            f"nosync: the hub cannot be reached: {len(hub.stood_in)} repositories the testers load are stood in "
            "for by tiny ones built in code (census.hub_standins; nothing is downloaded)"
        )
    return lines


def outcome_of_report(when: str, skipped_: bool, failed: bool, longrepr: Any, said: dict | None) -> CheckOutcome | None:
    """A check's outcome from its test report's phase (`when`), status and `longrepr`, and the outcome its item said
    (`said`, in its user properties); None where the report says none (a passing setup or teardown)."""
    if said is not None and when == "call":
        return CheckOutcome.from_dict(said)
    if skipped_ and when == "setup":  # the tester class skips itself (a decorator, a mark)
        reason = (longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)).removeprefix("Skipped: ")
        return skipped(f"the tester skips itself: {reason}")
    if failed and when in ("setup", "call"):  # the harness itself broke before any verdict
        why = str(longrepr).strip().splitlines()[-1:] or ["an error"]
        return CheckOutcome(Verdict.NOT_CHECKED, False, why[0][:200])
    return None


def add_import_failure(coverage: Coverage, module: str, longrepr: Any) -> None:
    """A test module that could not be imported hides its testers: counted, with the error's last line."""
    error = import_error(str(longrepr))
    modules = coverage.import_failures.setdefault(error, [])
    if module not in modules:
        modules.append(module)
