"""What one dynamo pass over a denoiser depends on, as digests: the code, the environment, and each call's inputs.

The graph check (detectors.dynamo) compiles the denoiser's `forward` and nothing else of the pipeline, so its result
is decided by: the code dynamo traces (the files of every class in the denoiser's module tree and of the objects its
modules hold: attention processors, hooks), torch's, diffusers' and Python's versions and dynamo's own config, and, at
each call of the denoiser, what dynamo guards on: the step it opens or falls in, the arguments (a tensor's dtype,
shape, strides, device, layout and grad flag; a Python value as it is), every module's own attributes (its config,
flags, hooks' scalar state) and parameters' metadata, and torch's global modes. A `CallRecorder` digests those at
every call (`calls`) and, apart, the tensor values the calls and parameters carry (`values`): dynamo never reads a
value while it traces a whole graph, but after a graph break the Python that runs eagerly may branch on one. Anything
whose state a digest cannot hold (a function passed as an argument, an object too deep to describe) makes the calls
unshareable, with the reason.

A recorder is active for the guarded calls inside `recording(...)`; the dynamo detector reads it when armed. In a
probe it leaves the forward uncompiled: the same guarded call, its digests, and no trace.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import hashlib
import inspect
import os
import weakref
from collections.abc import Iterator
from typing import Any

import torch

_DETECTOR_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dynamo.py")  # what compiles, and how
_OWN_PACKAGE = __name__.split(".")[0]
_DEPTH = 6  # nesting an argument or attribute may have before it counts as too deep to describe
# a module's own bookkeeping that the forward never reads (its parameters and submodules are described apart)
_SKIPPED_ATTRIBUTES = frozenset(
    {
        "_parameters", "_buffers", "_modules", "_non_persistent_buffers_set", "_state_dict_hooks",
        "_state_dict_pre_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks", "_backward_hooks",
        "_backward_pre_hooks",
    }
)  # fmt: skip


class Unshareable(Exception):
    """Something dynamo may guard on that no digest can hold."""


class CallRecorder:
    """Digests of the denoiser calls of one guarded call (see the module doc). `probe`: the calls run uncompiled."""

    def __init__(self, probe: bool = False) -> None:
        self.probe = probe
        self.start()

    def start(self) -> None:
        """A guarded call begins (the detector is armed): what an earlier one recorded goes."""
        self._calls = hashlib.sha256()
        self._values = hashlib.sha256()
        self.count = 0
        self.unshareable = ""

    def call(
        self, module: torch.nn.Module, step: int | None, args: tuple, kwargs: dict[str, Any], wrapper: Any = None
    ) -> None:
        """One call of the denoiser, before it runs (`wrapper`: the detector's own forward on it, not described)."""
        if self.unshareable:
            return
        self.count += 1
        values: list[torch.Tensor] = []
        try:
            arguments = _describe((args, kwargs), values)
            described = (step, arguments, module_state(module, values, wrapper), _global_modes())
            self._calls.update(repr(described).encode())
            for tensor in values:
                self._values.update(_bytes(tensor))
        except Unshareable as exc:
            self.unshareable = str(exc)
        except Exception as exc:  # the recording's own failure: never the pipeline's raise, only no sharing
            self.unshareable = f"its calls could not be digested ({type(exc).__name__}: {exc})"

    @property
    def calls(self) -> str:
        return self._calls.hexdigest()[:32]

    @property
    def values(self) -> str:
        return self._values.hexdigest()[:32]


_active: CallRecorder | None = None


@contextlib.contextmanager
def recording(recorder: CallRecorder) -> Iterator[CallRecorder]:
    """`recorder` records the denoiser calls of the guarded calls made inside (the dynamo detector's)."""
    global _active
    before, _active = _active, recorder
    try:
        yield recorder
    finally:
        _active = before


def active() -> CallRecorder | None:
    return _active


def module_state(module: torch.nn.Module, values: list[torch.Tensor] | None = None, wrapper: Any = None) -> list[Any]:
    """Every submodule's class, own attributes (its training flag, config, hooks) and parameters' and buffers'
    metadata (their values into `values`). Unshareable where an attribute cannot be described."""
    sink = values if values is not None else []
    state = []
    for name, sub in module.named_modules(remove_duplicate=False):
        attributes = {
            # a hook dict's keys are handle ids, a count across the process: its hooks in order are what runs
            k: list(v.values()) if k.startswith("_forward") and isinstance(v, dict) else v
            for k, v in vars(sub).items()
            if k not in _SKIPPED_ATTRIBUTES and v is not wrapper
        }
        tensors = {**sub._parameters, **sub._buffers}
        try:
            own = _describe(attributes, sink, module_ok=True)
        except Unshareable as exc:
            raise Unshareable(f"{name or type(sub).__name__}: {exc}") from None
        state.append((name, qualname(type(sub)), own, _describe(tensors, sink)))
    return state


def code_digest(module: torch.nn.Module) -> str:
    """The files of every class dynamo may trace into from `module`: its submodules' classes and their bases, and the
    classes of the objects they hold (processors, hooks), with the dynamo detector's own file."""
    classes: set[type] = set()
    for sub in module.modules():
        classes.update(type(sub).__mro__)
        for value in vars(sub).values():
            for held in value.values() if isinstance(value, dict) else (value,):
                if not isinstance(held, (torch.nn.Module, torch.Tensor)) and hasattr(held, "__dict__"):
                    classes.update(type(held).__mro__)
    files = sorted({f for f in map(_source_file, classes) if f} | {_DETECTOR_FILE})
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.encode() + b"\0" + _file_digest(path, *_stamp(path)).encode())
    return digest.hexdigest()[:32]


def config_digest() -> str:
    """dynamo's config (and the symbolic shapes' config it traces with) as a digest of its values."""
    configs = [torch._dynamo.config]
    experimental = getattr(getattr(torch.fx, "experimental", None), "_config", None)
    if experimental is not None:
        configs.append(experimental)
    digest = hashlib.sha256()
    for config in configs:
        for key, value in sorted(config.get_config_copy().items()):
            digest.update(f"{key}={_plain(value)}\n".encode())
    return digest.hexdigest()[:32]


def config_of(module: torch.nn.Module) -> Any:
    """The denoiser's diffusers config (its `config` dict), as a plain description; {} for a module without one."""
    config = getattr(module, "config", None)
    return _describe(dict(config), []) if isinstance(config, dict) else {}


def qualname(cls: type) -> str:
    """A class's full name, as the key spells it: `module.QualName`."""
    return f"{cls.__module__}.{cls.__qualname__}"


def _describe(value: Any, values: list[torch.Tensor], depth: int = 0, module_ok: bool = False) -> Any:
    """A plain, comparable description of what dynamo may guard on in `value` (tensors' values go to `values`)."""
    if depth > _DEPTH:
        raise Unshareable(f"a {qualname(type(value))} nested deeper than {_DEPTH} levels")
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return (type(value).__name__, repr(value))
    if isinstance(value, torch.Tensor):
        values.append(value)
        return (
            qualname(type(value)), str(value.dtype), tuple(value.shape), tuple(value.stride()), value.device.type,
            value.requires_grad, str(value.layout), value.storage_offset(),
        )  # fmt: skip
    if isinstance(value, (torch.dtype, torch.device, torch.Size, torch.memory_format, torch.layout, enum.Enum)):
        return (qualname(type(value)), repr(value))
    if isinstance(value, torch.nn.Module):
        if module_ok:  # a submodule held as an attribute: described where the module tree reaches it
            return ("module", qualname(type(value)))
        raise Unshareable(f"a module ({qualname(type(value))}) passed as an argument")
    if isinstance(value, dict):
        items = sorted(((repr(k), v) for k, v in value.items()), key=lambda kv: kv[0])
        return (qualname(type(value)), [(k, _describe(v, values, depth + 1, module_ok)) for k, v in items])
    if isinstance(value, (list, tuple)):
        return (qualname(type(value)), [_describe(v, values, depth + 1, module_ok) for v in value])
    if isinstance(value, (set, frozenset)):
        return (qualname(type(value)), sorted(repr(_describe(v, values, depth + 1, module_ok)) for v in value))
    if inspect.isroutine(value) or inspect.isclass(value):
        module, name = getattr(value, "__module__", None) or "", getattr(value, "__qualname__", "<locals>")
        if module_ok and ("<locals>" not in name or module.split(".")[0] == _OWN_PACKAGE):
            # its file is in the code digest; a closure of this plugin's (the guard's step hooks) is the same for all
            return ("code", module, name)
        kind = "a class" if inspect.isclass(value) else "a function"
        raise Unshareable(f"{kind} {value!r} (its state has no digest)")
    if isinstance(value, functools.partial):  # a hook's forward: the hook's method on the module
        parts = (value.func, value.args, value.keywords)
        return ("partial", _describe(parts, values, depth + 1, module_ok))
    if isinstance(value, weakref.ref):
        return ("weakref", qualname(type(value())))
    if hasattr(value, "__dict__") and not isinstance(value, type):
        own = {k: v for k, v in vars(value).items() if not k.startswith("__")}
        return (qualname(type(value)), _describe(own, values, depth + 1, module_ok))
    if hasattr(value, "__slots__"):
        slots = {name: getattr(value, name, None) for name in value.__slots__}
        return (qualname(type(value)), _describe(slots, values, depth + 1, module_ok))
    raise Unshareable(f"a {qualname(type(value))} (its state has no digest)")


def _global_modes() -> tuple:
    """torch's global modes that dynamo guards on or that change what an op traces to."""
    return (
        torch.is_grad_enabled(),
        torch.is_inference_mode_enabled(),
        str(torch.get_default_dtype()),
        torch.are_deterministic_algorithms_enabled(),
        torch.is_autocast_enabled("cpu"),
        torch.is_autocast_enabled("cuda"),
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
    )


def _bytes(tensor: torch.Tensor) -> bytes:
    plain = tensor.detach()
    if plain.device.type != "cpu":
        plain = plain.cpu()
    if plain.layout != torch.strided:
        plain = plain.to_dense()
    # flat first: a 0-dim tensor cannot be viewed as bytes; bytes first: numpy has no bfloat16
    return str(plain.dtype).encode() + plain.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def _plain(value: Any) -> str:
    """A config value as text that does not change between processes (no object addresses)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return f"{type(value).__name__}({', '.join(sorted(map(_plain, value)))})"
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: repr(kv[0]))
        return "{" + ", ".join(f"{k!r}: {_plain(v)}" for k, v in items) + "}"
    return qualname(type(value)) if not callable(value) else getattr(value, "__qualname__", qualname(type(value)))


def _source_file(cls: type) -> str | None:
    try:
        path = inspect.getsourcefile(cls)
    except (TypeError, OSError):
        return None
    return os.path.abspath(path) if path else None


def _stamp(path: str) -> tuple[int, int]:
    try:
        stat = os.stat(path)
    except OSError:
        return (0, 0)
    return stat.st_mtime_ns, stat.st_size


@functools.lru_cache(maxsize=4096)
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    """A file's contents as a digest, read again when its time or size changes."""
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return "unreadable"
