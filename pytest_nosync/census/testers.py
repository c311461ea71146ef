"""diffusers' own pipeline tester classes as targets: every pipeline of a diffusers checkout under the same checks.

A tester class (`tests/pipelines/**/test_*.py`) names a `pipeline_class` and builds a tiny pipeline of it with
`get_dummy_components()` and its call with `get_dummy_inputs(...)`. Two styles coexist upstream: a
`unittest.TestCase` mixing in `PipelineTesterMixin`, and a `BasePipelineTesterConfig` subclass (components and inputs)
that several pytest-style test classes share. What is checked is a provider: the class that defines
`get_dummy_components`, once per pipeline class, whichever test classes use it.

Nothing here is per pipeline. A tester becomes a `Target` after one plain call of its pipeline (`calibrate`), which
is also the pipeline's warm-up, and which measures what the suite needs to know of it:
  - the denoiser: of the pipeline's modules called at least once per scheduler step, the first of the usual names
    (transformer, unet, prior, decoder, ...), else the one called most;
  - steps per `num_inference_steps`, counted as a guard counts them (a step opens at the denoiser's call and closes
    at the pipeline's own `scheduler.step`), so that an img2img `strength`, a second-order scheduler's two iterations
    per step, a scheduler stepped twice an iteration (Cosmos) or a fixed timestep list are all accounted for when the
    checks ask for N steps; where no count changes them (a schedule capped at the test's count), a check that needs
    more is not checkable, a property of the pipeline the run counts with its reason;
  - whether `__call__` takes `callback_on_step_end` (the guard closes steps at the scheduler's step either way).
A tester that cannot be driven raises NotDrivable with one sentence: the run counts it as not checked, with the reason.
"""

from __future__ import annotations

import functools
import inspect
import math
import unittest
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

import torch

from .. import ids
from ..annotate import DENOISER_NAMES
from ..detection import devices
from ..patching import Patches, WrappedBar
from ..scenarios import AUTO, Scenario
from ..suite.pipelines import Uncallable
from ..suite.targets.base import CallContext, Target
from ..suite.targets.registry import assemble
from .outcomes import tested_class_name

Result = TypeVar("Result")
STEP_LISTS = ("timesteps", "sigmas")  # inputs that fix the steps whatever num_inference_steps says
# Inputs a pipeline documents as holding its steps at one count, and the value that lets num_inference_steps decide
# them: SanaSprint's `intermediate_timesteps` is "only used when num_inference_steps=2" and raises at any other count,
# None drops it. Set only where the steps are fixed without it (Calibration.step_inputs), and said so.
STEP_FREEING = {"intermediate_timesteps": None}
# (a tester's inputs method, the pipeline method its own tests call with them before the pipeline, the call's input
# its result gives where the call takes one, the result's field that holds it or ""): LEdits++ edits the image its
# `invert` inverted and raises without one, DiffEdit takes its mask and inverted latents as the call's inputs
PRELUDES = (
    ("get_dummy_mask_inputs", "generate_mask", "mask_image", ""),
    ("get_dummy_inversion_inputs", "invert", "image_latents", "latents"),
)

# A scenario parameter whose right value depends on the pipeline, where the tester's own cache tests set it for theirs
# (diffusers tests FasterCache on its guidance-distilled Flux with is_guidance_distilled=True): scenario → (parameter,
# the class attributes holding that cache's config in either tester style)
DOCUMENTED = {"faster_cache": ("is_guidance_distilled", ("FASTER_CACHE_CONFIG", "faster_cache_config"))}
_KNOWN_ARGUMENTS = {"device", "seed"}


class NotDrivable(Exception):
    """A tester class the census cannot build or call here; the message is the reason, one sentence."""


def provider(cls: type) -> type | None:
    """The class in `cls`'s bases that defines `get_dummy_components` (None: not a tester)."""
    return next((k for k in cls.__mro__ if "get_dummy_components" in vars(k)), None)


def is_pipeline_tester(cls: Any) -> bool:
    """A class with a `pipeline_class` (a diffusers pipeline class, or the placeholder diffusers exports for one whose
    optional dependencies are missing) and `get_dummy_components`/`get_dummy_inputs` of its own or inherited from a
    tester base (the mixins themselves define neither)."""
    if not inspect.isclass(cls) or provider(cls) is None or not callable(getattr(cls, "get_dummy_inputs", None)):
        return False
    pipeline = inspect.getattr_static(cls, "pipeline_class", None)
    if not inspect.isclass(pipeline):
        return False
    return bool(_placeholder_backends(pipeline)) or (
        hasattr(pipeline, "from_pretrained") and hasattr(pipeline, "components")
    )


def _placeholder_backends(cls: type) -> list[str]:
    """The backends a diffusers placeholder class stands for (of metaclass DummyObject); empty for a real class."""
    return list(getattr(cls, "_backends", ())) if type(cls).__name__ == "DummyObject" else []


def tester_name(cls: type) -> str:
    """`<module stem>::<provider>`: the same in every checkout (node ids depend on where the checkout is)."""
    source = provider(cls) or cls
    return ids.tester_target(source.__module__, source.__qualname__)


def untested_name(source: type, pipeline_class: str) -> str:
    """An untested class's reports' target, checked through the tester class `source` (the provider of its first
    sibling): `<module stem>::<source>::<pipeline_class>`, for the classic and the modular untested alike."""
    return ids.untested_target(source.__module__, source.__qualname__, pipeline_class)


@dataclass(frozen=True)
class Calibration:
    """What a tester's plain calls showed. Steps run = slope × num_inference_steps + offset (two calls measure it:
    an img2img pipeline runs floor(n × strength) of n, a PNDM scheduler one more than it is asked for); slope 0: the
    steps do not follow num_inference_steps (a fixed timestep list, a schedule capped at the test's count), the
    test's own count is used and every call runs `offset` steps, for the reason `fixed_because` says. Where inputs of
    STEP_FREEING let the steps follow the count, `step_inputs` holds them (every call is given them) and
    `fixed_because` says why the steps were fixed without them."""

    denoiser: str
    slope: float
    offset: float
    inference_steps: int  # the test's own num_inference_steps (0: the pipeline takes none)
    takes_step_callback: bool
    modules_called: dict[str, int]
    fixed_because: str = ""
    steps_are_calls: bool = False  # no denoising loop: each call is a step (Target.steps_are_calls)
    step_inputs: tuple[tuple[str, Any], ...] = ()

    @property
    def freed(self) -> str:
        """What the calls are given so that their steps follow num_inference_steps, and why ("": nothing)."""
        if not self.step_inputs:
            return ""
        given = ", ".join(f"{name}={value!r}" for name, value in self.step_inputs)
        return f"{given} (without it, {self.fixed_because})"

    @property
    def fixed_steps(self) -> int | None:
        """The steps every call runs, where no num_inference_steps changes them (None: they follow it, or each call
        is one)."""
        return int(self.offset) if self.slope <= 0 and not self.steps_are_calls else None

    def inference_steps_for(self, steps: int) -> int:
        if self.slope <= 0:
            return self.inference_steps
        wanted = max(1, math.ceil((steps - self.offset) / self.slope - 1e-9))
        if wanted < self.inference_steps and self.offset != 0:
            # Below the test's own count the fit is extrapolated, and an offset is rarely linear there (PNDM steps
            # n + 1 times for n >= 2 but once for 1): the test's count is known to give enough.
            return self.inference_steps
        return wanted


class Tester:
    """One tester class, made ready to drive: an instance, its components, its inputs for a call of N steps."""

    # The pipeline samples its noise on the host by design (diffusers' randn_tensor without a device, then a copy):
    # a device generator raises there, so the tester's CPU generators are passed as they are (samples_on_host).
    host_generators = False
    # The call's inputs the prelude's results give (PRELUDES): none until a prelude ran (`prelude` sets its own), also
    # for the drivers that build no Tester state of their own (census.modular_untested's)
    from_prelude: Mapping[str, Any] = MappingProxyType({})

    def __init__(self, cls: type) -> None:
        if not is_pipeline_tester(cls):
            raise NotDrivable(f"{cls.__qualname__} has no pipeline_class with get_dummy_components/get_dummy_inputs")
        self.cls = cls
        self.name = tester_name(cls)
        self.pipeline_class = inspect.getattr_static(cls, "pipeline_class")
        backends = _placeholder_backends(self.pipeline_class)
        if backends:
            raise NotDrivable(
                f"{self.pipeline_class.__name__} needs {', '.join(backends)}, not installed here (diffusers gives a "
                "placeholder class for it)"
            )
        self.calibration: Calibration | None = None
        self._instance: Any = None
        self._inputs = _input_binder(cls.get_dummy_inputs)

    @property
    def instance(self) -> Any:
        if self._instance is None:
            self._instance = _instantiate(self.cls)
        return self._instance

    def release(self) -> None:
        """Drop the test instance (a later use makes a new one, as the test runner would)."""
        self._instance = None

    def documented(self, scenario: Scenario) -> Scenario:
        """`scenario` with the parameters the tester's own cache tests set for its pipeline (DOCUMENTED), where the
        scenario leaves them to be found (`auto`) and the tester sets them."""
        parameter, attributes = DOCUMENTED.get(scenario.name, ("", ()))
        if not parameter or scenario.value(parameter) != AUTO:
            return scenario
        for cls in self._siblings():
            for attribute in attributes:
                config = getattr(cls, attribute, None)
                value = config.get(parameter) if isinstance(config, dict) else getattr(config, parameter, None)
                if isinstance(value, bool):
                    return scenario.with_values({parameter: str(value).lower()})
        return scenario

    def _siblings(self) -> list[type]:
        """The tester class, then the classes of its module sharing its provider: a pytest-style module keeps a cache's
        test (and its config) in a class of its own beside the one the census checks."""
        base = provider(self.cls) or self.cls
        module = inspect.getmodule(self.cls)
        found = vars(module).values() if module is not None else ()
        others = [c for c in found if isinstance(c, type) and issubclass(c, base) and c is not self.cls]
        return [self.cls, *others]

    def components(self) -> dict[str, Any]:
        """A fresh instance's dummy components, seeded as the test seeds them."""
        try:
            return self.instance.get_dummy_components()
        except NotDrivable:
            raise
        except (ImportError, OSError, ValueError, TypeError, AttributeError, RuntimeError) as exc:
            raise NotDrivable(_reason("get_dummy_components()", exc)) from exc
        except BaseException as exc:
            if _is_skip(exc):  # the tester skips itself here (unittest.SkipTest, pytest.skip)
                raise NotDrivable(f"get_dummy_components() skips: {exc}") from exc
            raise

    def build(self, device: torch.device, dtype: torch.dtype) -> Any:
        """The tester's pipeline from its dummy components, in `dtype` on `device`."""
        return assemble(self.pipeline_class, self.components(), device, dtype)

    def call_parameters(self, pipe: Any) -> frozenset[str]:
        """The keywords the pipeline's call takes."""
        return _parameters(type(pipe).__call__)

    def call_kwargs(self, pipe: Any, ctx: CallContext) -> dict[str, Any]:
        """The test's dummy inputs for a call that runs at least `ctx.steps` denoising steps, on ctx's device."""
        inputs = {**self._inputs(self.instance, ctx), **self.from_prelude}
        if "num_inference_steps" in inputs and "num_inference_steps" in self.call_parameters(pipe):
            listed = next((inputs[k] for k in STEP_LISTS if inputs.get(k) is not None), None)
            if inputs["num_inference_steps"] is None and listed is not None:  # the list alone gives the steps
                inputs["num_inference_steps"] = len(listed)
            for fixed in STEP_LISTS:  # a list of timesteps would fix the steps whatever the count says
                inputs.pop(fixed, None)
        calibration = self.calibration  # before it (the calibrating calls), the test's own steps: they work
        if calibration is not None:
            inputs.update(calibration.step_inputs)
        steps = inputs.get("num_inference_steps")
        if calibration is not None and calibration.inference_steps:
            steps = calibration.inference_steps_for(ctx.steps)
        if isinstance(steps, int):
            inputs = self.with_steps(pipe, inputs, steps)
        return {k: _on_device(v, ctx, self.host_generators) for k, v in inputs.items()}

    def with_steps(self, pipe: Any, inputs: dict[str, Any], steps: int) -> dict[str, Any]:
        """`inputs` for a call of `steps` num_inference_steps."""
        return {**inputs, "num_inference_steps": steps}

    def report_facts(self) -> dict[str, Any]:
        """What a report of its pipeline says beside its findings: the inputs that free its steps, where any do."""
        freed = self.calibration.freed if self.calibration is not None else None
        return {"steps_freed_by": freed} if freed else {}

    def target(self) -> Target:
        """The tester as a Target of the suite (the denoiser known once calibrated)."""
        return Target(
            name=self.name,
            pipeline_class=tested_class_name(self.pipeline_class),
            checkpoint="",
            build_components=self.components,
            call_kwargs=self.call_kwargs,
            text_encoding="the tester's own dummy components",
            denoiser=self.calibration.denoiser if self.calibration else "transformer",
            steps_are_calls=self.calibration.steps_are_calls if self.calibration else False,
        )

    def prelude(self, pipe: Any, ctx: CallContext) -> None:
        """What the tester's own tests call before the pipeline (PRELUDES), with the tester's inputs for it (one image
        of a list, as those tests do before a call): once, as the pipeline keeps its result (LEdits++), or the calls
        take it as an input (DiffEdit: `from_prelude`), for every later call. A raise there is the pipeline's
        (Uncallable)."""
        results: dict[str, Any] = {}
        self.from_prelude = results
        for inputs_method, method, input_name, field in PRELUDES:
            given = getattr(self.cls, inputs_method, None)
            run = getattr(pipe, method, None)
            if not callable(given) or not callable(run):
                continue
            inputs = _input_binder(given)(self.instance, ctx)
            if isinstance(inputs.get("image"), list):  # the tests' own calls after `invert` edit one image
                inputs["image"] = inputs["image"][0]
            try:
                with torch.no_grad():
                    result = run(**{k: _on_device(v, ctx) for k, v in inputs.items()})
            except Exception as exc:
                raise Uncallable(exc) from exc
            if input_name in self.call_parameters(pipe):
                results[input_name] = getattr(result, field) if field else result

    def with_host_generators(
        self, pipe: Any, ctx: CallContext, call: Callable[[dict[str, Any]], Result]
    ) -> tuple[Result, dict[str, Any]]:
        """`call` given the tester's inputs for `pipe` (call_kwargs), and those inputs; where it raised because the
        pipeline samples its noise on the host (samples_on_host), once more with the tester's own generators, and
        with them from then on."""
        kwargs = self.call_kwargs(pipe, ctx)
        try:
            return call(kwargs), kwargs
        except Exception as exc:
            error = exc.error if isinstance(exc, Uncallable) else exc
            if self.host_generators or not samples_on_host(error):
                raise
        self.host_generators = True
        kwargs = self.call_kwargs(pipe, ctx)
        return call(kwargs), kwargs

    def calibrate(self, pipe: Any, ctx: CallContext) -> Calibration:
        """Two plain calls (the first is the pipeline's warm-up), counting the loop's steps as a guard counts them
        and each module's calls: with the test's own num_inference_steps, and with more."""
        first, kwargs = self.with_host_generators(pipe, ctx, lambda kwargs: _count(pipe, kwargs))
        if first.raw_steps == 0:  # no scheduler step and no progress bar: a pipeline of one model call, or a few
            return self._calls_as_steps(pipe, first)
        denoiser = _denoiser(first.calls, first.in_steps, first.raw_steps)
        if denoiser is None:
            raise NotDrivable(
                f"no module of {self.pipeline_class.__name__} is called once per step (called: {first.calls})"
            )
        parameters = self.call_parameters(pipe)
        asked = kwargs.get("num_inference_steps") if "num_inference_steps" in parameters else None
        asked = asked if isinstance(asked, int) and asked > 0 else None
        fit = functools.partial(_fit, pipe, denoiser=denoiser, parameters=parameters, with_steps=self.with_steps)
        slope, offset, fixed_because = fit(kwargs, stepped=first.steps_of(denoiser), asked=asked)
        # freed only where the steps are fixed below the 2 the sync checks need: a class they check keeps its inputs
        too_few = slope <= 0 and asked is not None and offset < 2
        freeing = {k: v for k, v in STEP_FREEING.items() if k in parameters} if too_few else {}
        freed = _freed_fit(fit, {**kwargs, **freeing}, asked) if freeing else None
        if freed is not None:  # the steps follow the count with them: every call is given them
            slope, offset = freed
        self.calibration = Calibration(
            denoiser=denoiser,
            slope=slope,
            offset=offset,
            inference_steps=asked or 0,
            takes_step_callback="callback_on_step_end" in parameters,
            modules_called=first.calls,
            fixed_because=fixed_because if slope <= 0 or freed is not None else "",
            step_inputs=tuple(freeing.items()) if freed else (),
        )
        return self.calibration

    def _calls_as_steps(self, pipe: Any, first: _Counted) -> Calibration:
        """A pipeline with no denoising loop (a latent upsampler, Flux Redux's image-to-embedding prior): each call
        is a step, as in a serving loop calling it, and its largest model the denoiser (what the graph checks
        compile)."""
        models = {n: m for n, m in getattr(pipe, "components", {}).items() if isinstance(m, torch.nn.Module)}
        if not models:
            raise NotDrivable(f"{self.pipeline_class.__name__} has no denoising loop and no model to check")
        denoiser = max(models, key=lambda name: sum(p.numel() for p in models[name].parameters()))
        self.calibration = Calibration(
            denoiser=denoiser,
            slope=0.0,
            offset=0.0,
            inference_steps=0,
            takes_step_callback=False,
            modules_called=first.calls,
            steps_are_calls=True,
        )
        return self.calibration


@dataclass
class _Counted:
    """One plain call, counted: the loop's steps as the pipeline's scheduler or progress bar gives them (`raw_steps`),
    each top-level module's calls and the raw steps it was called in, and the order of the calls and scheduler steps
    (`events`: a module's name, or None for a step of the pipeline's own scheduler)."""

    raw_steps: int
    by_scheduler: bool
    calls: dict[str, int]
    in_steps: dict[str, set[int]]
    events: list[str | None]

    def steps_of(self, denoiser: str) -> int:
        """The steps a guard of this denoiser counts: one opens at the denoiser's call and closes at the scheduler's
        next step, so a loop whose scheduler steps twice an iteration (Cosmos: once for x0, once for the sample) runs
        one step an iteration. Steps of a progress bar (no scheduler step) are its updates."""
        if not self.by_scheduler:
            return self.raw_steps
        names = {name.strip() for name in denoiser.split(",")}
        steps, open_ = 0, False
        for event in self.events:
            if event is None:
                steps, open_ = steps + open_, False
            elif event in names:
                open_ = True
        return steps


def _count(pipe: Any, kwargs: dict[str, Any]) -> _Counted:
    """One plain call, counted (see _Counted). The steps are the pipeline's own scheduler's; where it never steps
    (SkyReels V2's diffusion forcing steps a copy per latent frame), its progress bar's."""
    events: list[str | None] = []
    steps, updates = _SchedulerSteps(pipe, events), _ProgressUpdates(pipe)
    counts = _ModuleCalls(pipe, lambda: (steps.count, updates.count), events)
    with steps, updates, counts, torch.no_grad():
        try:
            pipe(**kwargs)
        except Exception as exc:
            raise Uncallable(exc) from exc
    by_scheduler = steps.count > 0
    stepped = steps.count if by_scheduler else updates.count
    in_steps = {
        name: {at[0] if by_scheduler else at[1] for at in seen} & set(range(stepped))
        for name, seen in counts.seen.items()
    }
    return _Counted(stepped, by_scheduler, counts.calls, in_steps, events)


FLOORED_STEPS = ("strength", "denoising_start", "denoising_end")  # run floor(n × share) of n steps


def _fit(
    pipe: Any,
    kwargs: dict[str, Any],
    *,
    stepped: int | None,
    asked: int | None,
    denoiser: str,
    parameters: frozenset[str],
    with_steps: Callable[[Any, dict[str, Any], int], dict[str, Any]],
) -> tuple[float, float, str]:
    """(slope, offset, why the steps stay) of the steps in num_inference_steps (Calibration), from a call with
    `kwargs` (`asked` steps asked, `stepped` run: None, counted here) and one asking more (_further_steps), whose
    inputs `with_steps` gives (Tester.with_steps)."""
    if stepped is None:
        stepped = _count(pipe, kwargs).steps_of(denoiser)
    if asked is None:
        return 0.0, float(stepped), "its call takes no num_inference_steps"
    further = _further_steps(asked, parameters)
    try:
        more = _count(pipe, with_steps(pipe, kwargs, further)).steps_of(denoiser)
    except Uncallable as exc:  # the pipeline takes only its test's count (SanaSprint's SCM: 2): the steps stay
        _count(pipe, kwargs)  # unless it now raises at that count too: then its raise is no cap (Uncallable)
        first_line = (str(exc).splitlines() or [""])[0][:160]
        return 0.0, float(stepped), f"num_inference_steps={further} raised {type(exc.error).__name__}: {first_line}"
    slope = (more - stepped) / (further - asked)
    return slope, stepped - slope * asked, f"num_inference_steps={further} ran {more} too"


def _freed_fit(fit: Callable[..., tuple[float, float, str]], kwargs: dict[str, Any], asked: int
               ) -> tuple[float, float] | None:  # fmt: skip
    """(slope, offset) of the steps with the STEP_FREEING inputs in `kwargs` (`fit`: _fit of the pipeline), where they
    follow the count there; None where they still do not, or a call with them raised (the steps stay as found
    without them)."""
    try:
        slope, offset, _ = fit(kwargs, stepped=None, asked=asked)
    except Uncallable:
        return None
    return (slope, offset) if slope > 0 else None


def _further_steps(asked: int, parameters: frozenset[str]) -> int:
    """The second calibrating call's num_inference_steps. Steps are linear in it (a second-order scheduler's 2n - 1,
    PNDM's n + 1), so one more step than the test's own measures the slope, except where the pipeline runs a share
    of them: there far enough that the share's floor cannot hide it. A fit that is still wrong makes a check run
    too few steps, which it reports as not checked."""
    if parameters & set(FLOORED_STEPS):
        return 2 * asked + 8
    return asked + 1


# ---- instances and inputs ---------------------------------------------------------------------------------------
def _instantiate(cls: type) -> Any:
    """An instance as the test runner makes one: a TestCase for its default method name, after setUpClass, then
    setUp (a few start patches there that the call needs; most clean caches)."""
    try:
        instance = cls()  # a TestCase takes its default method name, runTest, even when it has none
    except TypeError as exc:
        raise NotDrivable(f"{cls.__qualname__}() cannot be instantiated: {exc}") from exc
    if isinstance(instance, unittest.TestCase):
        for hook in (getattr(cls, "setUpClass", None), getattr(instance, "setUp", None)):
            try:
                hook()
            except BaseException as exc:  # a skip there (a deprecated pipeline: pytest.skip) is not ours to obey
                if not isinstance(exc, Exception) and not _is_skip(exc):
                    raise
    return instance


def _input_binder(method: Callable[..., Any]) -> Callable[[Any, CallContext], dict[str, Any]]:
    """How to call `get_dummy_inputs` of either style: `(self, device, seed=0)`, `(self)` with the class's generator,
    a few with more keyword arguments that have defaults. Any other required argument is not understood."""
    signature = inspect.signature(method)
    names = list(signature.parameters)[1:]
    required = [
        n for n in names
        if signature.parameters[n].default is inspect.Parameter.empty
        and signature.parameters[n].kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]  # fmt: skip
    unknown = [n for n in required if n not in _KNOWN_ARGUMENTS]
    if unknown:
        raise NotDrivable(f"get_dummy_inputs takes {', '.join(unknown)}, which the census does not know how to give")

    def bind(instance: Any, ctx: CallContext) -> dict[str, Any]:
        given = {"device": _device_name(ctx.device), "seed": ctx.seed}
        try:
            return method(instance, **{n: given[n] for n in names if n in given})
        except (ImportError, OSError, ValueError, TypeError, AttributeError, RuntimeError) as exc:
            raise NotDrivable(_reason("get_dummy_inputs()", exc)) from exc

    return bind


def _device_name(device: torch.device) -> str:
    """What a test passes as `device`: generators are replaced by ours after (see _on_device), so the CPU serves any
    test; tensors it builds there are moved to the call's device with the rest of the inputs."""
    return "cpu"


def _on_device(value: Any, ctx: CallContext, host_generators: bool = False) -> Any:
    """An input on the call's device, as a caller that keeps its data there passes it: tensors moved, generators
    made on the device (a CPU generator makes the pipeline sample on the host and copy, in the loop for
    stochastic schedulers: the harness's transfer, not the pipeline's), unless the pipeline samples on the host by
    design (`host_generators`: they stay as given). A floating-point tensor is in the call's dtype, as a caller
    running the pipeline in it passes it (its text encoder's embeddings, its latents): the testers' float32 inputs
    given to a bfloat16 pipeline raised in its first layer (Wan's patch embedding)."""
    if isinstance(value, torch.Generator):
        return value if host_generators else devices.generator(ctx.device, int(value.initial_seed()))
    if isinstance(value, torch.Tensor):
        return value.to(ctx.device, ctx.dtype if value.is_floating_point() else value.dtype)
    if isinstance(value, list) and value and all(isinstance(v, torch.Generator) for v in value):
        return value if host_generators else [devices.generator(ctx.device, int(v.initial_seed())) for v in value]
    return value


def samples_on_host(error: BaseException) -> bool:
    """Whether a call raised because it samples on the host with a device generator (diffusers' randn_tensor given
    no device: the pipeline's own design, as LDMPipeline's and KarrasVe's)."""
    return isinstance(error, ValueError) and "Cannot generate a cpu tensor from a generator of type" in str(error)


@functools.lru_cache(maxsize=512)
def _parameters(function: Callable[..., Any]) -> frozenset[str]:
    try:
        return frozenset(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return frozenset()


def _is_skip(exc: BaseException) -> bool:
    return isinstance(exc, unittest.SkipTest) or type(exc).__name__ == "Skipped"  # pytest.skip's outcome


def _reason(where: str, exc: BaseException) -> str:
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")[:240]
    if isinstance(exc, ImportError):
        return f"{where} needs a module that is not installed: {first}"
    if isinstance(exc, OSError) and ("hub" in first.lower() or "huggingface" in first.lower() or "offline" in first):
        return f"{where} needs a hub repository this machine cannot get: {first}"
    return f"{where} raised {type(exc).__name__}: {first}"


# ---- counting a plain call ---------------------------------------------------------------------------------------
class _ModuleCalls:
    """Forward calls of each top-level module of a pipeline during a block, and the step counters' values at each;
    each call's module name is appended to `events`."""

    def __init__(self, pipe: Any, step: Callable[[], tuple[int, int]], events: list[str | None]) -> None:
        self.calls: dict[str, int] = {}
        self.seen: dict[str, set[tuple[int, int]]] = {}
        self._step = step
        self._events = events
        self._hooks: list[Any] = []
        self._modules = {
            name: module for name, module in getattr(pipe, "components", {}).items()
            if isinstance(module, torch.nn.Module)
        }  # fmt: skip

    def __enter__(self) -> _ModuleCalls:
        for name, module in self._modules.items():
            self.calls[name] = 0
            self.seen[name] = set()

            def hook(module: Any, args: Any, name: str = name) -> None:
                self.calls[name] += 1
                self.seen[name].add(self._step())
                self._events.append(name)

            self._hooks.append(module.register_forward_pre_hook(hook))
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self._hooks:
            handle.remove()


class _SchedulerSteps:
    """Calls of the pipeline's own scheduler's `step` during a block (a copy of the scheduler is not counted), each
    appended to `events` as None; consecutive ones count once."""

    def __init__(self, pipe: Any, events: list[str | None]) -> None:
        self.count = 0
        self._events = events
        self._scheduler = getattr(pipe, "scheduler", None)
        self._patches = Patches()

    def __enter__(self) -> _SchedulerSteps:
        scheduler = self._scheduler
        original = getattr(type(scheduler), "step", None)
        if scheduler is None or original is None:
            return self

        @functools.wraps(original)
        def step(this: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(this, *args, **kwargs)
            if this is scheduler:  # counted when it returns, where a guard closes the step
                # a step right after another, no module called between, is the same iteration's (Cosmos: x0, then
                # the sample)
                self.count += not self._events or self._events[-1] is not None
                self._events.append(None)
            return result

        self._patches.setattr(type(scheduler), "step", step)
        return self

    def __exit__(self, *exc: object) -> None:
        self._patches.undo()


class _ProgressUpdates:
    """Updates of the progress bars the pipeline opens during a block (`bar.update(n)` counts n), or their items where
    the pipeline iterates one."""

    def __init__(self, pipe: Any) -> None:
        self.count = 0
        self._pipe = pipe
        self._patches = Patches()

    def __enter__(self) -> _ProgressUpdates:
        pipe = self._pipe
        original = getattr(type(pipe), "progress_bar", None)
        if original is None:
            return self

        @functools.wraps(original)
        def progress_bar(this: Any, *args: Any, **kwargs: Any) -> Any:
            bar = original(this, *args, **kwargs)
            return _CountingBar(bar, self) if this is pipe else bar

        self._patches.setattr(type(pipe), "progress_bar", progress_bar)
        return self

    def __exit__(self, *exc: object) -> None:
        self._patches.undo()


class _CountingBar(WrappedBar):
    def __init__(self, bar: Any, updates: _ProgressUpdates) -> None:
        super().__init__(bar)
        self._updates = updates

    def __iter__(self) -> Iterator[Any]:
        for item in self._bar:
            yield item
            self._updates.count += 1  # after the iteration's body, as `update()` is called at its end

    def update(self, n: int = 1) -> Any:
        self._updates.count += n
        return self._bar.update(n)


def _denoiser(calls: dict[str, int], in_steps: dict[str, set[int]], steps: int) -> str | None:
    """The module called in every step: the first of the usual names among them, else the most called of them. Where
    none is (Wan 2.2 runs `transformer` in the first steps and `transformer_2` in the others, each twice a step with
    guidance), the usual names that together are, comma-separated. A loop whose scheduler steps more than once per
    iteration has no module in every step: there the same is asked of each module's number of calls."""
    for covers in (lambda seen, n: len(seen) >= steps, lambda seen, n: n >= steps):
        every_step = {name: calls[name] for name, seen in in_steps.items() if covers(seen, calls[name])}
        for name in DENOISER_NAMES:
            if name in every_step:
                return name
        if every_step:
            return max(every_step, key=lambda name: every_step[name])
        together = [name for name in DENOISER_NAMES if calls.get(name)]
        if covers(set().union(*(in_steps[name] for name in together)), sum(calls[name] for name in together)):
            return ",".join(together)
    return None


def testers_of(module: Any) -> Iterator[type]:
    """The tester classes defined in a module, one per provider (the first test class that uses it)."""
    seen: set[type] = set()
    for value in vars(module).values():
        if is_pipeline_tester(value) and value.__module__ == module.__name__:
            source = provider(value)
            if source not in seen:
                seen.add(source)
                yield value
