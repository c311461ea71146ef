"""The suite's graph checks, traced ahead in helper processes while this one runs the other checks.

Tracing a denoiser with dynamo is host work of several seconds per target, and most of the suite's time; the other
checks keep one core busy and the GPU nearly idle. So when a run selects the built-in suite's graph checks, helper
processes start with the session, each builds the targets it is handed and runs the same `run_check("graph_breaks",
...)` on the same device, dtype, steps and GuardOptions (the baseline's matcher included), and sends back the Report.
The test of each graph check takes its Report when it runs (the plugin moves those tests after the suite's other
checks, so the reports are ready by then and no helper uses the GPU while step metrics are timed).

A helper is a fresh interpreter on this process's sys.path: it runs the code that is installed, not what a conftest
patched in this process (use --nosync-graph-workers 0 for that). It checks that it imported the same diffusers.
Whatever goes wrong in a helper (it cannot start, dies, imports another diffusers) leaves its checks to this
process: they run here as without helpers, and the summary says why. A target this diffusers cannot build is
skipped as it would be here.
"""

from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
import tempfile
import threading
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass
from typing import IO, Any

from ...detection.guard_options import GuardOptions
from ...findings import Report

MAX_AUTO = 3  # helpers `auto` starts at most (see auto_count)


@dataclass(frozen=True)
class GraphJob:
    """One graph check of a built-in target, as its test would run it."""

    test_id: str
    target: str  # a name in suite.targets.registry.TARGETS
    device: str
    dtype: str  # a torch dtype's name, e.g. "bfloat16"
    steps: int
    seed: int
    options: GuardOptions


@dataclass(frozen=True)
class Outcome:
    """A helper's answer to one job: the check's Report, or why the target was skipped, or why the helper could not
    run it (then the test runs the check in its own process)."""

    report: Report | None = None
    skipped: str = ""
    failed: str = ""


def auto_count(jobs: int, cpus: int | None) -> int:
    """Helpers for `auto`: none for a single graph check (a helper's start-up would cost more than it overlaps), else
    one per four cores, at most MAX_AUTO (the other checks need the rest). None below four cores: there a helper
    takes the core the run's own torch threads use, and pays the imports and builds again: slower, not faster."""
    if jobs < 2:
        return 0
    return min(MAX_AUTO, jobs, (cpus or 1) // 4)


# ---- the wire: length-prefixed pickles -----------------------------------------------------------------------------
def send(stream: IO[bytes], message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def receive(stream: IO[bytes]) -> Any:
    header = stream.read(8)
    if len(header) < 8:
        raise EOFError("the helper closed its end")
    (size,) = struct.unpack("<Q", header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the helper closed its end mid-message")
    return pickle.loads(data)


def helper_command() -> list[str]:
    return [sys.executable, "-m", "pytest_nosync.plugin.graph_helpers.helper"]


def diffusers_file() -> str:
    import diffusers  # asked in a helper, which imports it there: the controller need not yet

    return os.path.realpath(diffusers.__file__)


class GraphHelpers:
    """`count` helper processes working through `jobs` in order (each takes the next when it finishes one).
    `outcome(test_id)` waits for a job's Outcome; `close()` ends the helpers."""

    def __init__(self, jobs: list[GraphJob], count: int, command: list[str] | None = None) -> None:
        self.futures: dict[str, Future[Outcome]] = {job.test_id: Future() for job in jobs}
        self.count = count
        self.problems: list[str] = []  # one line per helper that failed, for the summary
        self.fallbacks: list[str] = []  # why each check a helper did not run ran in this process
        self.answered = 0  # checks whose tests took a helper's report (or skip)
        self.claimed = 0  # checks this process took back from the queue (its test came before a helper took it)
        self._taken: set[str] = set()
        self._queue = deque(jobs)
        self._lock = threading.Lock()
        self._alive = count
        self._up = 0  # helpers that have started and announced their diffusers
        self._procs: list[subprocess.Popen[bytes]] = []
        self._logs: list[IO[bytes]] = []
        self._threads: list[threading.Thread] = []
        self._closing = False
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # import what this one does
        started = []
        for index in range(count):
            log = tempfile.TemporaryFile()  # noqa: SIM115 - the helper's stderr, kept until close()
            self._logs.append(log)
            try:
                proc = subprocess.Popen(
                    command or helper_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env
                )
            except OSError as exc:
                self._helper_failed(index, f"could not start: {exc}", None)
                continue
            self._procs.append(proc)
            started.append((index, proc, log))
        self._expected = diffusers_file()  # imported here while the helpers start, not before
        for args in started:
            thread = threading.Thread(target=self._serve, args=args, daemon=True)
            thread.start()
            self._threads.append(thread)

    def has(self, test_id: str) -> bool:
        return test_id in self.futures

    def done(self, test_id: str) -> bool:
        future = self.futures.get(test_id)
        return future is None or future.done()

    def claim(self, test_id: str) -> bool:
        """Take the job of `test_id` back if no helper has started it while every live helper is up and busy: its
        test has come, and tracing it here costs less than waiting for a helper to be free. (A helper still starting
        takes its job in moments, and this process would pay dynamo's own start-up for it.) True when taken: the
        test then traces it itself."""
        with self._lock:
            if self._up < self._alive:
                return False
            for job in self._queue:
                if job.test_id == test_id:
                    self._queue.remove(job)
                    self.futures.pop(test_id)
                    self.claimed += 1
                    return True
        return False

    def outcome(self, test_id: str) -> Outcome | None:
        """The Outcome of the job of `test_id` (waiting for it), or None when no helper has that job."""
        future = self.futures.get(test_id)
        if future is None:
            return None
        outcome = future.result()
        if test_id not in self._taken:
            self._taken.add(test_id)
            if outcome.failed:
                self.fallbacks.append(outcome.failed)
            else:
                self.answered += 1
        return outcome

    def close(self) -> None:
        """End the helpers. One that is ended here failed nothing (its thread may still be telling it to stop, or it
        may be tracing a job a run stopped early left undone): it is not a problem for the summary."""
        with self._lock:
            self._closing = True
            self._queue.clear()  # a run that stops early (-x, ^C) leaves the rest undone
        for proc in self._procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self._procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        for thread in self._threads:
            thread.join(timeout=10)  # after this, `problems` and `fallbacks` are final
        for log in self._logs:
            log.close()

    # ---- one thread per helper -----------------------------------------------------------------------------------
    def _next(self) -> GraphJob | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None

    def _serve(self, index: int, proc: subprocess.Popen[bytes], log: IO[bytes]) -> None:
        job = None
        try:
            imported = receive(proc.stdout)
            if imported != self._expected:
                raise RuntimeError(f"it imported diffusers from {imported}, this process from {self._expected}")
            with self._lock:
                self._up += 1
            while (job := self._next()) is not None:
                send(proc.stdin, job)
                self.futures[job.test_id].set_result(receive(proc.stdout))
                job = None
            send(proc.stdin, None)
        except Exception as exc:
            if self._closing:  # close() ended it: the run is over, the helper failed nothing
                if job is not None and not self.futures[job.test_id].done():
                    self.futures[job.test_id].set_result(Outcome(failed="the run ended before this check was traced"))
                return
            self._helper_failed(index, str(exc) or type(exc).__name__, job, log, proc)

    def _helper_failed(
        self,
        index: int,
        reason: str,
        job: GraphJob | None,
        log: IO[bytes] | None = None,
        proc: subprocess.Popen[bytes] | None = None,
    ) -> None:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        tail = _tail(log, proc)
        failed = f"graph helper {index + 1}: {reason}" + (f" ({tail})" if tail else "")
        with self._lock:
            self.problems.append(failed)
            self._alive -= 1
            left = [job] if job is not None else []
            if self._alive <= 0:  # no helper is left to take the queue
                left += list(self._queue)
                self._queue.clear()
        for waiting in left:
            future = self.futures.get(waiting.test_id)
            if future is not None and not future.done():
                future.set_result(Outcome(failed=failed))


def _tail(log: IO[bytes] | None, proc: subprocess.Popen[bytes] | None) -> str:
    """The last line the helper wrote to stderr, and its exit status when it has one."""
    parts = []
    if proc is not None and proc.poll() is not None:
        parts.append(f"exit status {proc.returncode}")
    if log is not None:
        log.seek(0)
        lines = [line for line in log.read().decode(errors="replace").splitlines() if line.strip()]
        if lines:
            parts.append(lines[-1].strip()[:300])
    return "; ".join(parts)
