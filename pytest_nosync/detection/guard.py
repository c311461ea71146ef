"""The guard: arms the detectors of its checks around a block, knows which step and region code runs in, judges
what they found, and restores every global they changed, also when the block raises.

    with nosync_guard(pipe, checks=("syncs",)) as g:
        pipe(**kwargs, callback_on_step_end=g.callback_on_step_end)
    g.report.passed, g.report.findings

Steps: with a pipeline attached, the pipeline's denoising loop gives them (annotate: a step opens at the denoiser's
first call in an iteration, with what that iteration did before it, and closes when the pipeline's scheduler has
stepped; the loop ends with the pipeline's progress bar). Without one, use `with g.step(): ...` or `g.end_step()`
(then the first step opens when the guard is entered). `whole_block=True` (the plugin's marker): with a pipeline, the
block's steps are its loop's (what the block does before it is before the steps); without one, the block is one step,
until a pipeline's loop begins in it: then that pipeline's steps are the block's and what came before them is before
the steps (only for checks that need no step windows, in "warn" mode and untraced: the others cannot re-draw a step
they measured). `steps_later=True` with it (a marked test that takes the `nosync` fixture): no step opens at the
entry; the steps are those drawn inside (its `nosync.guard()` blocks' or a pipeline's loop), and when none is, the
whole block is the step (as for a guard whose steps were never marked). Findings between two steps of a loop belong
to the next step, and after the loop (VAE decode, output conversion) to `after_steps`.

The guard is the detectors' StepContext (detectors.base): they see it through that protocol only.
"""

from __future__ import annotations

import contextlib
import time
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from .. import attribution, checks, run_report
from ..annotate import DENOISER_NAMES, LoopWatch, PipelineAnnotations
from ..findings import Finding, Frame, Kind, Mode, Phase, Report, merge, not_checked_finding
from ..policy import judge
from . import devices
from .detectors import detectors_for
from .detectors.base import CannotCheck, Detector
from .guard_options import GuardOptions, split_options

ERROR_HINT = "the code under test raised: fix it upstream, or list it in the baseline as a known error with a reference"


class Guard:
    """See the module docstring. `test_id`, `check` and `target` name the report (check defaults to the checks).
    `map_cuda`: under the emulation, CUDA-written code in the block runs on the emulated device (nosync_guard's
    default; the plugin's own guards leave it to the run, which maps CUDA for every test or for none)."""

    def __init__(
        self,
        pipeline: Any = None,
        options: GuardOptions | None = None,
        *,
        test_id: str = "",
        check: str = "",
        target: str = "",
        enabled: bool = True,
        whole_block: bool = False,
        steps_later: bool = False,
        map_cuda: bool = False,
        on_finish: Callable[[Report], None] | None = None,
        detectors: Iterable[Detector] = (),
    ) -> None:
        self.options = options or GuardOptions()  # its check names are known ones (GuardOptions says which is not)
        self.pipeline = pipeline
        self.enabled = enabled
        self.whole_block = whole_block
        self.steps_later = steps_later
        self.map_cuda = map_cuda
        self._unmap_cuda: Callable[[], None] | None = None
        self.on_finish = on_finish
        self.report = Report(test_id=test_id, check=check or ",".join(self.options.checks), target=target)
        self._extra = list(detectors)
        self._detectors: list[Detector] = []
        self._unchecked: list[str] = []
        self._records: list[Finding] = []
        self._pending: list[Finding] = []
        self._regions: list[str] = []
        self._step: int | None = None
        self._completed = 0
        self._annotations: PipelineAnnotations | None = None
        self._unhooked = False  # a pipeline was attached without a denoiser of the given name to open its steps
        self._watch: LoopWatch | None = None
        self._loops = 0  # denoising loops begun (annotate): between their steps findings wait for the next one
        self._in_loop = False
        self._scheduler_stepped = False  # in the current loop: the pipeline's own scheduler's steps close the steps
        self._step_started = 0.0
        self._step_ms: dict[int, float] = {}
        self._active = False
        self._entered = False  # entered once: a guard is one block's
        self._unobserved = 0
        self._raised = False  # the code under test raised in the block (an `error` finding)

    # ---- the context manager -------------------------------------------------------------------
    def __enter__(self) -> Guard:
        if self._entered:  # its detectors, its report and its CUDA mapping are one block's: a second entry lost them
            raise RuntimeError("a nosync guard checks one block: make a new guard for another (or a nested) block")
        self._entered = True
        if not self.enabled:
            return self
        if not self.options.checks and not self.options.traces:  # judged on nothing, it passed (a trace is a job)
            raise ValueError("a guard needs at least one check to run (e.g. checks=('syncs',)), or a trace, got none")
        backend = devices.resolve(self.options.backend, syncs=checks.needs_sync_backend(self.options.checks))
        if backend != self.options.backend:
            self.options = replace(self.options, backend=backend)
        self.report.backend = backend
        armed: list[Detector] = []
        try:
            if self.map_cuda and backend == "emulate":  # before arming: the detectors see the block as it will run
                self._unmap_cuda = devices.map_cuda(self.options.checks)
            if self.pipeline is not None:
                self._annotations = PipelineAnnotations(self.pipeline, self, self.options.denoiser)
                self._annotations.attach()
                self._unhooked = not self._annotations.hooked
            elif self.whole_block and self._redrawable():
                self._watch = LoopWatch(self)
                self._watch.attach()
            for detector in detectors_for(self.options, self._extra):
                try:
                    detector.arm(self)
                except CannotCheck as exc:  # raised before it changed anything: run the block without it
                    self._unchecked.append(str(exc))
                    continue
                armed.append(detector)
        except BaseException:
            try:
                self._disarm(armed)
            finally:
                self._restore_cuda()
            raise
        self._detectors = armed
        self._active = True
        if self.whole_block and self.pipeline is None and not self.steps_later:
            self.begin_step()  # the block is the step, until a pipeline's loop begins in it (LoopWatch)
        return self

    def _redrawable(self) -> bool:
        """Whether the block's step may be re-drawn when a pipeline's loop begins in it (see the module doc)."""
        options = self.options
        return options.mode == Mode.WARN and not options.traces and not checks.per_step(options.checks)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> bool:
        if not self.enabled:
            return False
        if exc is not None:
            self._record_own(exc)
        if self.whole_block and self._step is not None:
            self.end_step()
        self._active = False
        try:
            self._disarm(self._detectors)
        finally:
            self._restore_cuda()
        self._finish()
        if self.on_finish is not None:
            self.on_finish(self.report)
        return False  # never swallow: in fail-fast mode the raise must reach the offending line

    def _restore_cuda(self) -> None:
        if self._unmap_cuda is not None:
            unmap, self._unmap_cuda = self._unmap_cuda, None
            unmap()

    def _disarm(self, detectors: list[Detector]) -> None:
        errors: list[BaseException] = []
        for detector in reversed(detectors):
            try:
                detector.disarm()
            except Exception as exc:  # restore the others before reporting
                errors.append(exc)
        for patched in (self._annotations, self._watch):
            if patched is None:
                continue
            try:
                patched.detach()
            except Exception as exc:
                errors.append(exc)
        self._annotations = self._watch = None
        if errors:
            raise errors[0]

    def _finish(self) -> None:
        self._flush_pending()
        findings = list(self._records)
        for detector in self._detectors:
            findings.extend(detector.findings())
        findings = merge(findings)
        for detector in self._detectors:
            findings = detector.reconcile(findings)
        for detector in self._detectors:
            detector.settled(findings)
        if self._completed == 0 and self._step is None and not (self._raised and self.pipeline is not None):
            # No step was ever marked: the whole block is the step under test (unless a pipeline's loop was to draw
            # them and the block raised before it began: what ran was its set-up).
            findings = [_with_phase(f, Phase.IN_STEP, 0) if f.phase == Phase.BEFORE_STEPS else f for f in findings]
        unchecked = self._unchecked + [r for r in (d.unchecked() for d in self._detectors) if r]
        loop_steps = self._completed + (1 if self._step is not None else 0)
        if self._loops and loop_steps < 2 and checks.needs_sync_backend(self.options.checks) and not self._raised:
            # one step leaves no step after it: the work that follows a step's update (callback_on_step_end, the
            # next iteration's setup) would be judged as after the steps, and pass
            unchecked.append(self._too_few_steps(loop_steps))
        judged, passed = judge(findings + [not_checked_finding(r) for r in unchecked], self.options.policy,
                               self.options.known)  # fmt: skip
        report = self.report
        report.findings = judged
        report.passed = passed
        report.steps = self._completed + (1 if self._step is not None else 0)
        if self._step_ms:
            report.metrics["step_ms"] = {str(k): round(v, 3) for k, v in self._step_ms.items()}
        for detector in self._detectors:
            detector.conclude(report)

    def _too_few_steps(self, loop_steps: int) -> str:
        """Why a loop of fewer than two steps is not checked, and what to change: the call's steps, or, where the
        guard found no denoiser of the name it was given to open the steps, that name (a UNet pipeline under the
        default `transformer` drew one step of a four-step call)."""
        if self._unhooked:
            found = [n for n in DENOISER_NAMES if hasattr(getattr(self.pipeline, n, None), "register_forward_pre_hook")]
            named = f": name it, denoiser={found[0]!r}" if found else ": name the pipeline's denoiser (denoiser=...)"
            return (f"the pipeline has no {self.options.denoiser!r} (the guard's denoiser, whose calls open the "
                    f"steps), so its loop ran {loop_steps} step(s) as the guard saw them{named}")  # fmt: skip
        return (
            f"the pipeline's loop ran {loop_steps} denoising step(s): the sync checks need 2, so that what runs "
            "after a step's update (a callback_on_step_end included) falls in a step: call it with "
            "num_inference_steps >= 2"
        )

    # ---- what detectors see (detectors.base.StepContext) ---------------------------------------
    @property
    def raised(self) -> bool:
        return self._raised

    @property
    def denoiser(self) -> Any:
        """The pipeline's denoiser (the first, where steps run one of several)."""
        name = self.options.denoiser.split(",")[0].strip()
        return getattr(self.pipeline, name, None) if self.pipeline is not None else None

    @property
    def current_step(self) -> int | None:
        return self._step

    @property
    def effective_step(self) -> int | None:
        if self._step is not None:
            return self._step
        return self._completed if self._completed > 0 else None

    @property
    def phase(self) -> str:
        if self._step is not None:
            return Phase.IN_STEP
        return Phase.BEFORE_STEPS if self._completed == 0 else Phase.AFTER_STEPS

    @property
    def step_ms(self) -> Mapping[int, float]:
        return self._step_ms

    @property
    def observing(self) -> bool:
        return self._unobserved == 0

    @contextmanager
    def unobserved(self) -> Iterator[None]:
        """The plugin's own work inside the block (the profiler synchronizes when a schedule stops it): detectors
        record nothing and raise nothing in it."""
        self._unobserved += 1
        try:
            yield
        finally:
            self._unobserved -= 1

    def record(
        self,
        kind: str,
        frames: Iterable[Frame],
        *,
        hint: str = "",
        detail: str = "",
        source: str = "",
        count: int = 1,
        data: dict[str, Any] | None = None,
    ) -> Finding:
        """Record one finding at the current step/region, blaming the first frame outside torch."""
        where, stack = attribution.attribute(frames)
        finding = Finding(
            kind=kind,
            where=where,
            stack=stack,
            step=self._step,
            phase=self.phase,
            region=self.region or ("loop" if self._step is not None else None),
            count=count,
            hint=hint,
            detail=detail,
            source=source,
            data=data or {},
        )
        if not self.observing:
            return finding
        if self._step is None and (self._in_loop or (self._completed > 0 and not self._loops)):
            self._pending.append(finding)  # between two steps: the next step's, or outside the loop's steps
        else:
            self._records.append(finding)
        return finding

    # ---- steps ---------------------------------------------------------------------------------
    def begin_step(self) -> None:
        """Open the next step (no-op if one is open)."""
        if not self._active or self._step is not None:
            return
        self._step = self._completed
        for finding in self._pending:
            self._records.append(_with_phase(finding, Phase.IN_STEP, self._step))
        self._pending = []
        self._step_started = time.perf_counter()
        for detector in self._detectors:
            detector.on_step_begin(self._step)

    def end_step(self) -> None:
        """Close the open step (opening one first if none is: then it started at the guard's entry)."""
        if not self._active:
            return
        if self._step is None:
            self._step = self._completed
            for finding in self._pending:
                self._records.append(_with_phase(finding, Phase.IN_STEP, self._step))
            self._pending = []
        step = self._step
        if self._step_started:
            self._step_ms[step] = (time.perf_counter() - self._step_started) * 1e3
        self._step_started = 0.0
        for detector in self._detectors:
            detector.on_step_end(step)
        self._step = None
        self._completed += 1

    def close_step(self) -> None:
        """Close the open step, if one is (a step boundary the pipeline's loop reaches more than once)."""
        if self._step is not None:
            self.end_step()

    # ---- the pipeline's denoising loop (annotate) ----------------------------------------------------------------
    def adopt(self, pipeline: Any) -> bool:
        """Attach the first pipeline whose loop begins in a whole-block guard (annotate.LoopWatch): its steps become
        the block's. False when the guard cannot take it (one is attached, or the block is not active)."""
        if not self._active or self.pipeline is not None:
            return False
        if self._step is not None and self._completed == 0:  # the block's step: what it saw was before the loop
            self._records = [
                replace(f, phase=Phase.BEFORE_STEPS, step=None, region=None if f.region == "loop" else f.region)
                if f.phase == Phase.IN_STEP
                else f
                for f in self._records
            ]
            self._step, self._step_started = None, 0.0
        self.pipeline = pipeline
        self._annotations = PipelineAnnotations(pipeline, self, self.options.denoiser)
        self._annotations.attach()
        self._unhooked = not self._annotations.hooked
        return True

    def loop_begins(self) -> None:
        """The pipeline's progress bar is entered: what runs from here waits for the step the denoiser's next call
        opens (a loop that never calls it is no denoising loop: its work is outside the steps). Without a hooked
        denoiser, step 0 (or the next) opens here."""
        if not self._active:
            return
        self._flush_pending()  # between two loops: no step's
        self._loops += 1
        self._in_loop = True
        self._scheduler_stepped = False
        self.iteration_begins()

    def scheduler_stepped(self) -> None:
        """The pipeline's own scheduler returned from `step()`: the open step closes."""
        self._scheduler_stepped = True
        self.close_step()

    def progress_updated(self) -> None:
        """The loop's progress bar was updated: in a loop whose own scheduler has not stepped, the open step closes
        here (Paradigms steps its window through the scheduler's batch_step_no_noise, SkyReels V2's diffusion forcing
        steps copies of it); elsewhere the scheduler's step closed it."""
        if not self._scheduler_stepped:
            self.close_step()

    def iteration_begins(self) -> None:
        """An iteration of an iterated progress bar: its step opens at the denoiser's call, or here without one."""
        if self._annotations is None or not self._annotations.hooked:
            self.begin_step()

    def loop_ends(self) -> None:
        """The loop is over: what follows (and what waited for a next step) is outside the steps."""
        if not self._active:
            return
        self.close_step()
        self._flush_pending()
        self._in_loop = False

    def _flush_pending(self) -> None:
        phase = Phase.BEFORE_STEPS if self._completed == 0 else Phase.AFTER_STEPS
        for finding in self._pending:
            self._records.append(_with_phase(finding, phase, None))
        self._pending = []

    @contextmanager
    def step(self) -> Iterator[int]:
        """`with g.step(): ...` marks one step explicitly."""
        self.begin_step()
        try:
            yield self._completed
        except BaseException as exc:
            # a fail-fast error, or the code's own raise, recorded in the step it happened in, before the step closes
            if self._active:
                self._record_own(exc)
            raise
        finally:
            self.end_step()

    def record_exception(self, exc: BaseException) -> Finding:
        """An exception the code under test raised inside the block, as an `error` finding at its raise site (in the
        step it happened in): a failure, or a known issue the baseline names. Steps it stopped are no claim."""
        self._raised = True
        with contextlib.suppress(AttributeError):  # once per guard: its block's exit sees the same exception again
            exc._nosync_recorded_by = (*getattr(exc, "_nosync_recorded_by", ()), self)  # type: ignore[attr-defined]
        kind = type(exc)
        name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
        version = run_report.diffusers_version()
        first = (str(exc).splitlines() or [""])[0][:300]
        return self.record(Kind.ERROR, attribution.frames_from_traceback(exc.__traceback__), hint=ERROR_HINT,
                           detail=f"{kind.__name__}: {first} (diffusers {version})", source="exception",
                           data={"exception": name, "message": str(exc), "diffusers": version})  # fmt: skip

    def _record_own(self, exc: BaseException) -> None:
        """`exc` as an `error` finding where the code under test raised it (not a detector's: absorbed; pytest's
        skip and fail are no Exception), once by this guard: a step records it where it was raised, and the block's
        exit sees it again; another guard's record of it is not this one's."""
        recorded_by = getattr(exc, "_nosync_recorded_by", ())
        if not self.absorb(exc) and isinstance(exc, Exception) and not any(guard is self for guard in recorded_by):
            self.record_exception(exc)

    def absorb(self, exc: BaseException) -> bool:
        """Let the detector that caused `exc` (fail-fast mode, a recompile) record it as a finding, once. True when
        a detector claimed it: the exception is the plugin's own, not the code's."""
        claimed = getattr(exc, "_nosync_absorbed", None)
        if claimed is not None:
            return claimed
        claimed = any(detector.absorb_exception(exc) for detector in self._detectors)
        with contextlib.suppress(AttributeError):
            exc._nosync_absorbed = claimed  # type: ignore[attr-defined]
        return claimed

    def callback_on_step_end(self, pipeline: Any, step: int, timestep: Any, callback_kwargs: dict) -> dict:
        """Pass as a diffusers pipeline's `callback_on_step_end`: closes the step (if the scheduler has not)."""
        self.close_step()
        return {}

    # ---- regions -------------------------------------------------------------------------------
    @property
    def region(self) -> str | None:
        return self._regions[-1] if self._regions else None

    def enter_region(self, name: str) -> None:
        self._regions.append(name)
        for detector in self._detectors:
            detector.on_region(name, True)

    def exit_region(self, name: str) -> None:
        for detector in self._detectors:
            detector.on_region(name, False)
        if self._regions and self._regions[-1] == name:
            self._regions.pop()
        elif name in self._regions:  # tolerate unbalanced exits after an exception
            del self._regions[len(self._regions) - 1 - self._regions[::-1].index(name)]

    @contextmanager
    def annotate(self, name: str) -> Iterator[None]:
        """Name a region of your own code (it appears in findings and traces)."""
        self.enter_region(name)
        try:
            yield
        finally:
            self.exit_region(name)


def _with_phase(finding: Finding, phase: str, step: int | None) -> Finding:
    region = finding.region
    if phase == Phase.IN_STEP and region is None:
        region = "loop"
    return replace(finding, phase=phase, step=step, region=region)


def nosync_guard(pipeline: Any = None, options: GuardOptions | None = None, **kwargs: Any) -> Guard:
    """The library entry point: `with nosync_guard(pipe, checks=("syncs",)) as g: ...`.

    Keyword arguments are GuardOptions fields (checks, backend, mode, budget, allow, ...) laid over `options`,
    and the Guard's own (test_id, check, target, whole_block, ...); see Guard and GuardOptions.

    Under the CPU emulation (the "auto" backend on a machine without CUDA), code written for CUDA runs on the emulated
    device inside the block, as it does in the plugin's run: `map_cuda=False` leaves CUDA alone. Code before the
    block is plain torch's: put what it moves to the device on `execution_device()`.
    """
    kwargs.setdefault("map_cuda", True)
    fields, rest = split_options(kwargs)
    options = replace(options, **fields) if options is not None else GuardOptions(**fields)
    return Guard(pipeline, options, **rest)
