"""What collection imported, frozen for a checking run (gc.freeze), and unfrozen at its end.

Everything collection imported (torch, transformers, diffusers, the test modules) lives for the run, and every full
collection of Python's cyclic collector would scan it: diffusers' testers collect in every setUp (scanning it was a
fifth of a census on the H100), and the growth check collects at each step end. Frozen here, those collections scan
what the run made since (devices.PausedCollector then freezes nothing more for a block, `devices.run_froze_heap`),
whatever the process froze before: the suite's six emulated growth checks took 14.6 s under an interpreter that froze
at start, 5.3 s with this (docs/validation.md, section 26).
"""

from __future__ import annotations

import atexit
import functools
import gc

import pytest

from ..detection import devices


class HeapFreeze:
    """Registered for every run that checks: freezes after collection, unfreezes at the run's end."""

    def __init__(self) -> None:
        self.froze = False

    @pytest.hookimpl(trylast=True)  # after collection's own work (the census installs its hub stand-ins first)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not self.froze:
            devices.freeze_for_the_run()  # a block's full collections scan what the run made since: few objects
            self.froze = True
            _freeze_at_exit()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.froze:
            gc.unfreeze()
            self.froze = False
            devices.run_froze_heap = False


def freeze_what_lives_for_the_run() -> None:
    """In a checking run that froze its imports: collect, then freeze what is left, for the run. For objects made
    after collection that live as long as the run, the suite's pipelines (built once per run, kept to its end) and
    the diffusers and transformers modules their build imported: left unfrozen, every full collection of the growth
    check scanned them, 240,000 objects after the six targets' builds, a fifth of a second a collection on the CPU and
    two seconds a growth test on an H200. Nothing that dies before the run's end may be frozen here (a reference
    cycle of it would stay until then): the census, which drops a class's pipeline after its checks, never calls it."""
    if devices.run_froze_heap:
        gc.collect()
        devices.freeze_for_the_run()


@functools.cache
def _freeze_at_exit() -> None:
    """Python collects once more as a process ends and walks every object the imports made (2 s a worker on the 2-core
    CPU, in each worker at a census's end, while the controller waits for them all). Frozen again at exit, that walk
    is skipped; the run unfreezes at its end as before, so nothing but the process's end sees it."""
    atexit.register(gc.freeze)
