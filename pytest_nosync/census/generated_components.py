"""Components an untested class's `__init__` requires that its sibling tester does not give (or gives of a class it
does not take), made from what the sibling gives, by the component's annotation, never per pipeline class
(census.untested builds the class with them, and its row says which were made and how).

`generated(pipeline_class, given)` makes, for each such component:

- a **scheduler** the annotation names a class of: one the sibling lacks (`low_res_scheduler: DDPMScheduler`,
  `inverse_scheduler: DDIMInverseScheduler`) from the sibling scheduler's config, as diffusers' users add one
  (`Scheduler.from_config(pipe.scheduler.config)`), or of its default config where the sibling's is no diffusers
  scheduler or one whose schedule the class refuses; one the sibling gives of another class (`scheduler:
  PNDMScheduler` where the sibling's is a consistency model's), where the class raised with the sibling's, of the
  annotated class's default config, the sibling's being written for another kind of schedule;
- a **model diffusers derives from one the sibling gives**: the annotated class's own `from_unet(unet)` /
  `from_transformer(transformer)`, where every other parameter has a default (an SDXL ControlNet Union from the
  sibling's UNet), those the sibling's component of that name (of another class: its ControlNet) has in its config
  passed on (the conditioning embedding's channels), seeded, then resized where its class keeps sizes of the released
  checkpoint (census.tiny_models);
- a **model the sibling gives, of its config changed** where the class concatenates more channels into it
  (census.fitted_models: CogView4's control pipeline, Lucy's edit);
- a **model of the class of one the sibling gives** under another name (`transformer_2` beside `transformer`): that
  class from the same config, seeded (Wan 2.2's second expert);
- a **model or processor of a class no sibling gives**, by the annotated class's name (census.made_models): built
  tiny in code, seeded, sized from the components beside it (HunyuanVideo 1.5's SigLIP tower as wide as its
  transformer embeds image features; HunyuanImage's refiner VAE).

A component none of these can make stays missing (as one whose build raises): the class keeps its reason. Every model
is built seeded, the run's own random stream left as it was. A class requiring an ONNX Runtime model
(`onnx_components`) is built from nothing: its models run on ONNX Runtime, not torch.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import typing
from collections.abc import Iterator, Mapping
from typing import Any

import torch
from diffusers import ModelMixin, SchedulerMixin

from . import made_models
from .fitted_models import fitted
from .tiny_models import BESIDE, beside, rebuilt, resized

SEED = 0
ONNX = "OnnxRuntimeModel"  # diffusers' wrapper of an ONNX Runtime session
DERIVING = (("from_unet", "unet"), ("from_transformer", "transformer"))  # diffusers' constructors, and what they take


def generated(
    pipeline_class: type, given: Mapping[str, Any], replace_schedulers: bool = False
) -> dict[str, tuple[Any, str]]:
    """The components of `pipeline_class.__init__` that `given` lacks or gives of a model class it does not take,
    made from `given` (see the module doc): name → (component, how it was made, for the row's note). A scheduler
    `given` holds of another class than the annotated one is replaced only with `replace_schedulers` (census.untested
    asks where the class raised with it: most pipelines run with a sibling's scheduler of another class)."""
    made: dict[str, tuple[Any, str]] = {}
    for name, (changes, how) in fitted(pipeline_class, given).items():
        with _seeded():
            made[name] = rebuilt(given[name], changes), how
    for name, (classes, required) in _annotated(pipeline_class).items():
        present = given.get(name)
        if name in made:
            continue
        if present is not None and (not classes or isinstance(present, classes)):
            continue
        if present is None and not required:
            continue
        if isinstance(present, SchedulerMixin) and not replace_schedulers:
            continue  # schedulers_to_replace names it
        for maker in (_scheduler, _derived, _same_class):
            try:
                value = maker(name, classes, given)
            except Exception:  # what cannot be made from the sibling's stays missing: the class keeps its reason
                value = None  # (a raise here is no verdict on the pipeline, whose checks would have taken it for one)
            if value is not None:
                made[name] = value
                break
        else:  # none made it: one built tiny in code, sized from the components beside it
            value = _built(_classes(pipeline_class).get(name, ()), {**given, **{n: v for n, (v, _) in made.items()}})
            if value is not None:
                made[name] = value
    return made


def schedulers_to_replace(pipeline_class: type, given: Mapping[str, Any]) -> list[str]:
    """The schedulers `given` holds of another class than the one `pipeline_class.__init__` names (what `generated`
    replaces only with `replace_schedulers`), by annotation alone: nothing built."""
    return [
        name
        for name, (classes, _) in _annotated(pipeline_class).items()
        if isinstance(given.get(name), SchedulerMixin)
        and any(issubclass(c, SchedulerMixin) for c in classes)
        and not isinstance(given[name], classes)
    ]


def makeable(pipeline_class: type, name: str, sibling_class: type) -> bool:
    """Whether `generated` can make `pipeline_class`'s component `name` from the components of a pipeline of
    `sibling_class` (by their `__init__`s' annotations: a plan chooses siblings before any is built)."""
    classes, _ = _annotated(pipeline_class).get(name, ((), False))
    if made_models.buildable(_classes(pipeline_class).get(name, ())) is not None:
        return True
    theirs = _annotated(sibling_class)
    if "scheduler" in theirs and any(issubclass(c, SchedulerMixin) for c in classes):
        return True
    if any(
        source in theirs and callable(getattr(c, constructor, None)) and _derives(getattr(c, constructor))
        for c in classes
        for constructor, source in DERIVING
    ):
        return True
    return any(c in their_classes for c in classes if issubclass(c, ModelMixin) for their_classes, _ in theirs.values())


@functools.lru_cache(maxsize=512)
def _init_hints(pipeline_class: type) -> dict[str, tuple[Any, bool]]:
    """`__init__`'s parameters after `self`: name → (its resolved annotation or None, required); empty where an
    annotation does not resolve (it names no class to make)."""
    try:
        parameters = inspect.signature(pipeline_class.__init__).parameters
        hints = typing.get_type_hints(pipeline_class.__init__)
    except Exception:
        return {}
    return {
        name: (hints.get(name), parameter.default is inspect.Parameter.empty)
        for name, parameter in list(parameters.items())[1:]
    }


@functools.lru_cache(maxsize=512)
def _classes(pipeline_class: type) -> dict[str, tuple[type, ...]]:
    """`__init__`'s parameters: name → the classes its annotation names."""
    return {
        name: tuple(m for m in _members(hint) if inspect.isclass(m))
        for name, (hint, _) in _init_hints(pipeline_class).items()
    }


@functools.lru_cache(maxsize=512)
def _annotated(pipeline_class: type) -> dict[str, tuple[tuple[type, ...], bool]]:
    """`__init__`'s parameters: name → (the scheduler and model classes its annotation names, required)."""
    return {
        name: (tuple(c for c in _classes(pipeline_class)[name] if issubclass(c, (ModelMixin, SchedulerMixin))),
               required)
        for name, (_, required) in _init_hints(pipeline_class).items()
    }  # fmt: skip


def _members(hint: Any) -> list[Any]:
    """A hint's classes, through unions, Optional and the list/tuple forms diffusers annotates models with."""
    if hint is None:
        return []
    arguments = typing.get_args(hint)
    if not arguments:
        return [hint]
    return [member for argument in arguments for member in _members(argument)]


def _scheduler(name: str, classes: tuple[type, ...], given: Mapping[str, Any]) -> tuple[Any, str] | None:
    wanted = next((c for c in classes if issubclass(c, SchedulerMixin)), None)
    source = given.get("scheduler")
    if wanted is None:
        return None
    if name not in given and isinstance(source, SchedulerMixin):
        try:
            return wanted.from_config(source.config), f"{wanted.__name__} from the sibling scheduler's config"
        except ValueError:  # a schedule the class refuses (UnCLIP's takes squaredcos_cap_v2 only): its own is used
            pass
    # a config written for another kind, or none
    return wanted(), f"{wanted.__name__} of its default config"


def _derived(name: str, classes: tuple[type, ...], given: Mapping[str, Any]) -> tuple[Any, str] | None:
    for cls in classes:
        for constructor, source_name in DERIVING:
            source = given.get(source_name)
            method = getattr(cls, constructor, None)
            if not isinstance(source, ModelMixin) or not callable(method) or not _derives(method):
                continue
            try:
                with _seeded():
                    if _takes_one_model(method):
                        config = getattr(given.get(name), "config", {})  # the sibling's own `name`, of another class
                        kwargs = {p: config[p] for p in list(inspect.signature(method).parameters)[1:] if p in config}
                        model = resized(method(source, **kwargs))
                    else:  # (its own model, the sibling's): Z-Image's ControlNet takes the transformer's embedders
                        model = method(beside(cls, source.config), source)
            except Exception:  # it needs more than the model (ControlNet-XS: a size): the component stays missing
                continue
            return model, f"{cls.__name__}.{constructor}(the sibling's {source_name})"
    return None


def _same_class(name: str, classes: tuple[type, ...], given: Mapping[str, Any]) -> tuple[Any, str] | None:
    for other, model in given.items():
        if isinstance(model, ModelMixin) and type(model) in classes:
            with _seeded():
                copy = type(model).from_config(model.config)
            how = f"a second {type(model).__name__} of the sibling's {other}'s config"
            return copy, how
    return None


def _built(classes: tuple[type, ...], components: Mapping[str, Any]) -> tuple[Any, str] | None:
    cls = made_models.buildable(classes)
    if cls is None:
        return None
    try:
        with _seeded():
            model = made_models.made(cls, components)
    except Exception:  # its backend missing (transformers' placeholder), sizes it refuses: the component stays missing
        return None
    return model, f"a tiny {type(model).__name__} built in code"


@contextlib.contextmanager
def _seeded() -> Iterator[None]:
    """The same weights every build, the run's own random stream left as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        yield


def onnx_components(pipeline_class: type) -> list[str]:
    """The components `pipeline_class.__init__` requires of ONNX Runtime's model class (by its name: a placeholder
    where onnxruntime is missing), which the census neither builds nor checks: their forward is no torch code."""
    return [
        name
        for name, (hint, required) in _init_hints(pipeline_class).items()
        if required and getattr(hint, "__name__", "") == ONNX
    ]


def _required(method: Any) -> int:
    """How many arguments a classmethod takes without a default (-1 where its signature cannot be read)."""
    try:
        parameters = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):
        return -1
    return sum(1 for p in parameters if p.default is inspect.Parameter.empty and p.kind is p.POSITIONAL_OR_KEYWORD)


def _takes_one_model(method: Any) -> bool:
    """Whether a classmethod takes one argument without a default (the model it derives from)."""
    return _required(method) == 1


def _derives(method: Any) -> bool:
    """Whether a classmethod derives a model from the sibling's: from it alone, or from a model of its own class built
    beside it and it (census.tiny_models.beside)."""
    return _required(method) == 1 or (_required(method) == 2 and _built_beside(method))


def _built_beside(method: Any) -> bool:
    owner = getattr(method, "__self__", None)
    return inspect.isclass(owner) and owner.__name__ in BESIDE
