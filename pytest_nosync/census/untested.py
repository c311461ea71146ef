"""The pipeline classes diffusers exports that no tester class names, checked through a sibling tester, or counted
with the reason they cannot be.

`exported_pipelines()` lists the installed diffusers' exported pipeline classes (DiffusionPipeline subclasses, the
placeholders it exports for those whose backend is missing, and ModularPipeline classes), each with its family: the
package of `diffusers.pipelines` (or `diffusers.modular_pipelines`) that exports it. Given the run's tester classes,
`plan` pairs each class no tester names with the testers of its family (its siblings), best first by the components
their pipelines' `__init__` share with the class's; a class whose family no test module of the selection tests is
paired with the testers of one module of other families instead: the module naming the best-ranked pipeline class
whose `__init__` takes every component the class requires, of the model classes it names (one module, so that shards
never both check the class). An `UntestedTester` then drives it as a tester: the class built from its sibling's
dummy components (those its own `__init__` takes), called with its sibling's dummy inputs (those its own `__call__`
takes), and, where those alone make its plain call raise, the inputs it takes that the sibling does not give,
generated from the sibling's (census.generated_inputs: an inpainting class's mask); a component it requires that the
sibling does not give is made from the sibling's where census.generated_components can (a scheduler, a ControlNet
from the UNet). A deprecated class (under `pipelines/deprecated/`, or a `deprecate()` its `__init__` always calls)
is tried as any other and keeps its deprecation beside its reason. A class that cannot be built so is counted with
its reason: a placeholder, a component or a required `__call__` input no sibling gives, no sibling in the run, a
plain call that raises with every fitting sibling's inputs, and with those generated from them (often an input its
`__call__` marks optional but needs that cannot be generated).
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
import textwrap
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import diffusers
import torch
from diffusers import DiffusionPipeline, ModelMixin
from diffusers.modular_pipelines import ModularPipeline

from .. import attribution
from ..source_identity import short_place
from ..suite.pipelines import Uncallable
from ..suite.targets.base import CallContext
from ..suite.targets.registry import assemble
from .diffusers_bugs import own_bug
from .generated_components import generated as generated_components
from .generated_components import makeable, onnx_components, schedulers_to_replace
from .generated_inputs import fewest_first, generated, knows
from .outcomes import tested_class_name
from .testers import (
    NotDrivable,
    Tester,
    _input_binder,
    _on_device,
    _parameters,
    _placeholder_backends,
    _reason,
    provider,
    tester_name,
    untested_name,
)

DEPRECATED_FAMILY = "deprecated"  # diffusers.pipelines.deprecated: kept importable, no longer maintained
MODULAR = "modular"
PIPELINE_TESTS = ("tests", "pipelines")  # where a diffusers checkout's tester modules are
MODULAR_TESTS = ("tests", "modular_pipelines")  # and its modular tester configs
NO_SIBLING = "no tester of its family in this run to build it from"
OTHER_MODULE_ELSEWHERE = "checked through the testers of another family's module, which is not in this run"
MODULAR_UNTESTED = (
    "a ModularPipeline class no modular tester config of this run names: its blocks are a config's to give"
)


@dataclass(frozen=True)
class Exported:
    """One pipeline class diffusers exports: its name, family, kind, the class (a placeholder's too), the reason it
    cannot be checked whatever tester the run has (`why_not`: a placeholder; "" otherwise) and why it is deprecated
    (`deprecated`, "" where it is not: it is tried all the same)."""

    name: str
    family: str
    pipeline_class: type
    modular: bool = False
    why_not: str = ""
    deprecated: str = ""


def census_exports(pipeline_classes: Iterable[type], modules: Iterable[Path]) -> list[Exported] | None:
    """The exported pipeline classes a census of these testers' pipelines accounts for: the installed diffusers' where
    one of them is a diffusers class tested in a diffusers checkout's `tests/pipelines` or `tests/modular_pipelines`,
    else None (testers of pipelines of their own, or of a tree that is not diffusers' tests: no export to account
    for)."""
    if not any(getattr(cls, "__module__", "").startswith("diffusers.") for cls in pipeline_classes):
        return None
    folders = (PIPELINE_TESTS, MODULAR_TESTS)
    if not any(set(folders) & set(zip(path.parts, path.parts[1:], strict=False)) for path in modules):
        return None
    return exported_pipelines()


def exported_pipelines() -> list[Exported]:
    """Every pipeline class the installed diffusers exports, by name (imports each: a few seconds, once a run)."""
    families = _families("diffusers.pipelines")
    modular_families = _families("diffusers.modular_pipelines")
    found: dict[str, Exported] = {}
    names = [n for key, names in diffusers._import_structure.items() for n in names
             if key in ("pipelines", "modular_pipelines") or key.startswith("utils.dummy_")]  # fmt: skip
    for name in sorted(set(names)):
        try:
            cls = getattr(diffusers, name)
        except Exception:  # an export that does not import is no class to count
            continue
        if not inspect.isclass(cls) or cls in (DiffusionPipeline, ModularPipeline):
            continue
        if _placeholder_backends(cls):
            if "Pipeline" in name:  # a placeholder of a pipeline (not of a scheduler or a model)
                found[name] = Exported(name, families.get(name, ""), cls, why_not=_placeholder_reason(cls))
        elif issubclass(cls, DiffusionPipeline):
            family = families.get(name) or _family_of_module(cls.__module__, "diffusers.pipelines.")
            found[name] = Exported(name, family, cls, deprecated=deprecated_reason(cls, family))
        elif issubclass(cls, ModularPipeline):
            found[name] = Exported(name, modular_families.get(name, MODULAR), cls, modular=True)
    return list(found.values())


def _families(package: str) -> dict[str, str]:
    """Exported name → the subpackage of `package` that exports it (its `_import_structure`, read without importing
    the subpackages)."""
    structure = getattr(importlib.import_module(package), "_import_structure", {})
    return {name: key.split(".")[0] for key, names in structure.items() for name in names}


def _family_of_module(module: str, prefix: str) -> str:
    return module.removeprefix(prefix).split(".")[0] if module.startswith(prefix) else ""


def _placeholder_reason(cls: type) -> str:
    backends = ", ".join(_placeholder_backends(cls))
    return f"needs {backends}, not installed here (diffusers exports a placeholder class for it)"


def deprecated_reason(cls: type, family: str) -> str:
    """Why `cls` is deprecated ("" where it is not): it lives under pipelines/deprecated/, or its `__init__` calls
    `deprecate()` whatever its arguments (a call under an `if` deprecates an argument, not the class)."""
    if family == DEPRECATED_FAMILY:
        return "deprecated (diffusers.pipelines.deprecated)"
    if _always_deprecates(cls.__init__):
        return "deprecated (its __init__ calls deprecate())"
    return ""


def _always_deprecates(function: Any) -> bool:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return False
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.FunctionDef) else []
    for statement in body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        name = getattr(getattr(call, "func", None), "id", None) or getattr(getattr(call, "func", None), "attr", None)
        if isinstance(call, ast.Call) and name == "deprecate":
            return True
    return False


# ---- pairing the untested classes with their siblings ------------------------------------------------------------
@dataclass(frozen=True)
class Untested:
    """A class no tester names, to be driven through its siblings (the run's testers of its family, best first; or,
    where the selection tests none of its family, those of one module of other families: `other_family`)."""

    pipeline_class: type
    family: str
    siblings: tuple[type, ...]
    deprecated: str = ""
    other_family: bool = False
    host: type | None = None  # the run's tester its checks are collected under (None: its first sibling)
    standins: tuple[type, ...] = ()  # those of its siblings that are stand-in testers (census.standin_testers)

    @property
    def name(self) -> str:
        return self.pipeline_class.__name__

    @property
    def parent(self) -> type:
        """The run's tester class whose node its checks are collected under: its host, else its first sibling."""
        return self.host or self.siblings[0]

    def standing_in(self, chosen: type | None) -> str:
        """The stand-in tester (census.standin_testers) `chosen` is, by name; "" for another sibling, or none."""
        return tester_name(chosen) if chosen is not None and chosen in self.standins else ""

    def driver(self) -> Tester:
        """Its driver, through its siblings (made once its first check runs: the siblings are tried then)."""
        return UntestedTester(self)


@dataclass
class Plan:
    """What a run does with the exported classes: the untested ones it drives through a sibling, and every other
    class no tester names with its reason (`reasons`: class name → why)."""

    exported: list[Exported]
    untested: list[Untested] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)


def plan(
    exported: Sequence[Exported],
    tester_classes: Iterable[type],
    named_elsewhere: Iterable[str] = (),
    modules: Iterable[Path] = (),
    standins: Iterable[type] = (),
) -> Plan:
    """The untested exported classes of `exported`, given the run's `tester_classes` (classic testers: a class with
    `pipeline_class`) and the names of the classes testers outside the run name (`named_elsewhere`: named_in): each
    with its siblings where it can be driven, else its reason. `modules`: the test modules of the whole selection
    where the run holds a part of it (a shard), beside the run's testers' own: a class whose family none of them
    tests is checked through the one module of another family the whole selection would choose (other_family).
    `standins`: testers written for families diffusers tests in no module (census.standin_testers). A stand-in of the
    class itself is its first sibling; those of other classes of its family come after the run's testers (so that a
    class checked through a tester keeps its row). A class only stand-ins can build is collected under the first
    tester of the module nearest to it (its host), chosen from the whole selection as another family's module is."""
    testers = [cls for cls in tester_classes if inspect.isclass(inspect.getattr_static(cls, "pipeline_class", None))]
    named = {tested_class_name(inspect.getattr_static(cls, "pipeline_class")) for cls in testers}
    named |= set(named_elsewhere)
    by_name = {e.name: e for e in exported}
    selection = _selection(testers, modules)
    tested = named | {name for names in selection.values() for name in names}
    tested_families = {by_name[n].family for n in tested if n in by_name and not by_name[n].modular}
    result = Plan(list(exported))
    for entry in exported:
        if entry.name in named:
            continue
        if entry.why_not or entry.modular:
            result.reasons[entry.name] = entry.why_not or MODULAR_UNTESTED
            continue
        family = [cls for cls in testers
                  if (own := by_name.get(tested_class_name(inspect.getattr_static(cls, "pipeline_class")))) is not None
                  and own.family == entry.family and not own.modular and not own.why_not]  # fmt: skip
        itself, kin = _standins_of(entry, standins, by_name)
        other_family = not family and entry.family not in tested_families
        host = None
        if other_family:  # the testers of the one module the whole selection would choose, whichever part runs
            module, why, hosts_only = _other_family_module(entry, selection, by_name, nearest=bool(itself or kin))
            family = [cls for cls in testers if module is not None and _module_of(cls) == module]
            why = why or f"{OTHER_MODULE_ELSEWHERE} ({module.name if module else ''})"
            if hosts_only and family:  # the nearest module's testers build nothing of it: its first one hosts
                host, family = min(family, key=tester_name), []
        else:
            why = NO_SIBLING  # its family's testers are in the selection, not in this part of it: another shard's
        if not family and host is None:
            result.reasons[entry.name] = with_deprecation(entry.deprecated, why)
            continue
        ranked = sorted(family, key=lambda cls: _rank(entry.pipeline_class, cls))
        kin = sorted(kin, key=lambda cls: _rank(entry.pipeline_class, cls))
        siblings = (*itself, *ranked, *kin)
        host = host or ranked[0]  # a stand-in has no node of the run (the first of siblings that is ranked)
        standing_in = (*itself, *kin)
        result.untested.append(
            Untested(entry.pipeline_class, entry.family, siblings, entry.deprecated, other_family, host, standing_in)
        )
    return result


def _standins_of(
    entry: Exported, standins: Iterable[type], by_name: dict[str, Exported]
) -> tuple[list[type], list[type]]:
    """The stand-in testers of `entry` itself, and those of other classes of its family."""
    itself, kin = [], []
    for cls in standins:
        name = tested_class_name(inspect.getattr_static(cls, "pipeline_class"))
        if name == entry.name:
            itself.append(cls)
        elif (own := by_name.get(name)) is not None and own.family == entry.family:
            kin.append(cls)
    return itself, kin


def with_deprecation(deprecated: str, reason: str) -> str:
    """A deprecated class's reason says its deprecation first."""
    return f"{deprecated}, and {reason}" if deprecated else reason


@functools.lru_cache(maxsize=2048)  # asked per tester for every class a plan places
def _module_of(cls: type) -> Path | None:
    try:
        return Path(inspect.getfile(cls)).resolve()
    except (TypeError, OSError):
        return None


def _selection(testers: Iterable[type], modules: Iterable[Path]) -> dict[Path, set[str]]:
    """The test modules of the selection (those given, and the testers') → the pipeline classes each names, read as
    text (named_by): what a shard knows of the others' modules too, so every shard chooses alike."""
    paths = {path.resolve() for path in modules} | {p for p in map(_module_of, testers) if p is not None}
    return {path: named_by(path) for path in sorted(paths) if path.is_file()}


def _other_family_module(
    entry: Exported, selection: dict[Path, set[str]], by_name: dict[str, Exported], nearest: bool = False
) -> tuple[Path | None, str, bool]:
    """The test module whose testers check `entry` where the selection tests none of its family: the first (sorted)
    module naming the best-ranked pipeline class of another family that takes every component `entry` requires, of
    the model classes it names (None, with the nearest one's lack, where none does; NO_SIBLING where none is near).
    `nearest`: where none takes them, the nearest one's module, only to host its checks (stand-ins build it): the
    third value says so."""
    fitting, near = [], []
    for module, names in selection.items():
        for name in names:
            other = by_name.get(name)
            if other is None or other.modular or other.why_not or other.family == entry.family:
                continue
            rank = (_class_rank(entry.pipeline_class, other.pipeline_class), name, str(module))
            lack = _lack_of(entry.pipeline_class, other.pipeline_class)
            (near if lack else fitting).append((rank, module, lack))
    if fitting:
        return min(fitting)[1], "", False
    if not near:
        return None, NO_SIBLING, False
    rank, module, lack = min(near)
    if nearest:
        return module, "", True
    return None, f"{NO_SIBLING}, nor one of another family that builds it (the nearest, {rank[1]}, {lack})", False


def _lack_of(pipeline: type, other: type) -> str:
    """What `other`'s `__init__` does not take of what `pipeline`'s requires ("" where nothing): a component, or a
    model of the class `pipeline` names (by their annotations: its tester's dummy components are checked at build)."""
    taken = _init_parameters(other)
    missing = [
        name
        for name, required in _init_parameters(pipeline).items()
        if required and name not in taken and not makeable(pipeline, name, other)
    ]
    if missing:
        return f"takes no {', '.join(missing)}"
    theirs = _models_taken(other)
    wrong = [
        f"{name} ({'/'.join(m.__name__ for m in models)})"
        for name, models in _models_taken(pipeline).items()
        if name in theirs
        and not any(issubclass(m, models) for m in theirs[name])
        and not makeable(pipeline, name, other)
    ]
    return f"takes no model(s) {', '.join(wrong)}" if wrong else ""


_NAMED = re.compile(r"^\s*pipeline_class\s*=\s*([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)


_DEFINED = re.compile(r"^class\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)


@functools.lru_cache(maxsize=2048)  # a plan and named_in read each module: once per run
def named_by(path: Path) -> frozenset[str]:
    """The pipeline classes a test module names (`pipeline_class = X`, read as text, nothing imported); where the
    module defines X itself, deriving from a class, that class too (the diffusers class a test's wrapper runs, which
    outcomes.tested_class_name counts)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    named = set(_NAMED.findall(text)) - _named_by_slow_tests(text)
    bases = dict(_DEFINED.findall(text))
    return frozenset(named | {bases[name] for name in named if name in bases})


_REAL_CHECKPOINTS = frozenset(("slow", "nightly"))  # diffusers' decorators of tests that load released checkpoints
_MAY_BE_SLOW = re.compile(r"^\s*@\s*[\w.]*\b(slow|nightly)\b", re.MULTILINE)


def _named_by_slow_tests(text: str) -> set[str]:
    """The classes only slow or nightly test classes of a module name: those load a released checkpoint and give no
    dummy components, so they test nothing the census can drive (Flux Redux's prior, whose one test is slow)."""
    if not _MAY_BE_SLOW.search(text):  # most modules have neither decorator: no syntax tree to build
        return set()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set()
    slow, fast = set(), set()
    for node in tree.body:  # test classes stand at a module's top
        if not isinstance(node, ast.ClassDef):
            continue
        decorators = {d.id if isinstance(d, ast.Name) else getattr(d, "attr", "") for d in node.decorator_list}
        named = {
            statement.value.id
            for statement in node.body
            if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Name)
            and any(isinstance(t, ast.Name) and t.id == "pipeline_class" for t in statement.targets)
        }  # fmt: skip
        (slow if decorators & _REAL_CHECKPOINTS else fast).update(named)
    return slow - fast


def named_in(folders: Iterable[Path]) -> set[str]:
    """The pipeline classes the test modules of these folders name: a run of a part of a family (a module, a shard)
    does not take a class another module tests for an untested one."""
    return {name for folder in folders for path in sorted(folder.glob("test_*.py")) for name in named_by(path)}


def module_families(root: Path, modules: Iterable[str]) -> dict[str, set[str]]:
    """Each test module's diffusers families that export a class no module of these names: those of the pipeline
    classes it names (named_by). --nosync-shard keeps the modules sharing one in one shard,
    never split: the family's untested classes are then planned in one shard, through the sibling one run takes. A
    family's ModularPipeline classes count too: one no config names is driven through the family's classic testers
    where its configs do not fit (census.modular_untested), so its modular and classic folders stay together."""
    modular = {n: f for n, f in _families("diffusers.modular_pipelines").items() if n.endswith("ModularPipeline")}
    families = {**_families("diffusers.pipelines"), **modular}
    named = {module: named_by(root / module) for module in modules}
    tested = set().union(*named.values())
    open_families = {family for name, family in families.items() if name not in tested}
    return {module: {families[n] for n in names if n in families} & open_families for module, names in named.items()}


def _rank(pipeline: type, tester: type) -> tuple[int, int, int, str]:
    """A sibling's rank for `pipeline` (lower first): the required components of `pipeline` its tester's pipeline does
    not take, then how few of its components, then of its call's inputs, that pipeline takes too, then its name."""
    return (*_class_rank(pipeline, inspect.getattr_static(tester, "pipeline_class")), tester_name(tester))


def _class_rank(pipeline: type, theirs: type) -> tuple[int, int, int]:
    """The rank of a pipeline class `theirs` to build `pipeline` from, as _rank's first three."""
    own, taken = _init_parameters(pipeline), set(_init_parameters(theirs))
    missing = sum(1 for name, required in own.items() if required and name not in taken)
    return (missing, -len(set(own) & taken), -len(_call_parameters(pipeline) & _call_parameters(theirs)))


def _named_parameters(method: Any) -> dict[str, bool]:
    """The named parameters a method takes after `self`: name → required."""
    try:
        signature = inspect.signature(method)
    except (TypeError, ValueError):
        return {}
    return {
        name: param.default is inspect.Parameter.empty
        for name, param in list(signature.parameters.items())[1:]
        if param.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    }


@functools.lru_cache(maxsize=1024)  # asked for every pair of classes a plan ranks (thousands); read-only
def _init_parameters(cls: type) -> dict[str, bool]:
    """The components `cls.__init__` takes: name → required."""
    return _named_parameters(cls.__init__)


def _required_call_parameters(cls: type) -> list[str]:
    return [name for name, required in _named_parameters(cls.__call__).items() if required]


def _takes_any(function: Any) -> bool:
    try:
        return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return False


# ---- driving one --------------------------------------------------------------------------------------------------
class UntestedTester(Tester):
    """An untested class driven as a tester, through the first of its siblings (best first) that fits: whose dummy
    components hold every model its `__init__` requires (of the class it names), whose dummy inputs hold every input
    its `__call__` requires, and with which a plain call of the class returns (with the sibling's inputs, else with
    those and the inputs generated from them: `generated`, their names). Where none fits, NotDrivable with the first
    sibling's lack; where none returns, NotDrivable with the first fitting one's raise."""

    def __init__(self, untested: Untested) -> None:
        self.untested = untested
        first = untested.siblings[0]
        self.name = untested_name(provider(first) or first, untested.name)
        self.pipeline_class = untested.pipeline_class
        self.calibration = None
        self._use(first)
        self._chosen: type | None = None
        self.generated: tuple[str, ...] = ()  # the inputs generated for each call (census.generated_inputs)
        self.made_components: dict[str, str] = {}  # the components made for it: name → how
        self._replace_schedulers = False  # a sibling's scheduler of another class than the annotated one replaced
        self._replaceable: list[str] = []  # the sibling's schedulers of such a class, as its last components held

    def _use(self, sibling: type) -> None:
        self.cls, self._instance = sibling, None
        self._inputs = _input_binder(sibling.get_dummy_inputs)
        self.from_prelude = {}  # another sibling's prelude's results are not this one's

    @property
    def standing_in(self) -> str:
        """The stand-in tester it is built through (census.standin_testers), by name; "" for a tester's sibling."""
        return self.untested.standing_in(self._chosen)

    def report_facts(self) -> dict[str, Any]:
        """A tester's facts, and what no tester gives it: the stand-in tester it is built through, the inputs generated
        for it and the components made for it."""
        facts = {"standin": self.standing_in} if self.standing_in else {}
        facts.update(super().report_facts())
        if self.generated:
            facts["generated_inputs"] = list(self.generated)
        if self.made_components:
            facts["generated_components"] = [f"{name}: {how}" for name, how in self.made_components.items()]
        return facts

    def components(self) -> dict[str, Any]:
        """The sibling's dummy components the class's `__init__` takes (a fresh set each time, as a tester's), and
        those it requires that the sibling does not give, made from them (census.generated_components)."""
        given = super().components()
        made = generated_components(self.pipeline_class, given, self._replace_schedulers)
        self.made_components = {name: how for name, (_, how) in made.items()}
        self._replaceable = schedulers_to_replace(self.pipeline_class, given)
        return self._taken({**given, **{name: value for name, (value, _) in made.items()}})

    def build(self, device: torch.device, dtype: torch.dtype) -> Any:
        if self._chosen is None:
            return self._choose(device, dtype)
        return assemble(self.pipeline_class, self.components(), device, dtype)

    def call_kwargs(self, pipe: Any, ctx: Any) -> dict[str, Any]:
        """The sibling's inputs the class's own `__call__` takes, and those generated from them (`generated`)."""
        inputs = self._given(super().call_kwargs(pipe, ctx))
        if self.generated:
            made = generated(self.pipeline_class, inputs, pipe)
            inputs.update({name: _on_device(made[name], ctx) for name in self.generated})
        return inputs

    def _choose(self, device: torch.device, dtype: torch.dtype) -> Any:
        """The first fitting sibling with which a plain call returns (see the class doc), and its pipeline."""
        onnx = onnx_components(self.pipeline_class)
        if onnx:  # no sibling's torch model stands in for an ONNX Runtime session, nor is one built
            reason = f"its model(s) {', '.join(onnx)} run on ONNX Runtime, not torch: nothing to check"
            raise NotDrivable(with_deprecation(self.untested.deprecated, reason))
        lacks, fitting, raised = [], [], []
        for sibling in self.untested.siblings:
            self._use(sibling)
            try:
                components = self.components()
                lack = self._lack(components)
            except NotDrivable as exc:  # the sibling's own build or inputs cannot be had here: the next is tried
                lacks.append(str(exc))
                continue
            if lack:
                lacks.append(f"{lack}, which no sibling tester of {self._of()} gives")
                continue
            fitting.append(sibling)
            self.generated, self._replace_schedulers = (), False
            pipe, exc = self._plain_call(components, device, dtype)
            if exc is not None and pipe is not None:  # the inputs the class takes that the sibling does not give
                given = self.call_kwargs(pipe, CallContext(device, dtype))
                made = tuple(generated(self.pipeline_class, given, pipe))
                for inputs in fewest_first(self.pipeline_class, made):
                    self.generated = inputs  # a fresh pipeline each: the raise may have left state behind
                    pipe, exc = self._plain_call(self.components(), device, dtype)
                    if exc is None:
                        break
            if exc is not None and self._replaceable:  # its own class of scheduler
                self._replace_schedulers = True
                pipe, exc = self._plain_call(self.components(), device, dtype)
            if exc is not None:  # the next sibling is tried
                raised.append((sibling, exc, self.generated, tuple(self.made_components)))
                continue
            self._chosen = sibling
            return pipe
        self.generated, self._replace_schedulers = (), False
        deprecated = self.untested.deprecated
        if not fitting:
            raise NotDrivable(with_deprecation(deprecated, lacks[0]))
        # A raise with every fitting sibling's inputs is the inputs' as much as the class's (an inpainting class given
        # no mask): not a verdict on the class, so counted with that raise as its reason, never passed.
        sibling, exc, made, built = raised[0]
        also = f" and the input(s) {', '.join(made)} generated from them" if made else ""
        also += f", the component(s) {', '.join(built)} made from its components" if built else ""
        why = f"with the inputs of its sibling {sibling.__qualname__}{also} (and of every other that fits), "
        site = _raise_site(exc)
        bug = own_bug(exc, site)  # verified at diffusers' line: said so
        bug = f" ({bug})" if bug else ""
        raise NotDrivable(with_deprecation(deprecated, f"{why}{_reason('a plain call', exc)} at {site}{bug}"))

    def _plain_call(self, components: dict[str, Any], device: torch.device, dtype: torch.dtype) -> tuple[Any, Any]:
        """The class built from `components` and called once with the current inputs, after the sibling's prelude
        (DiffEdit's call takes its results): (pipeline or None, its raise or None)."""
        pipe = None
        try:
            pipe = assemble(self.pipeline_class, components, device, dtype)
            self.prelude(pipe, CallContext(device, dtype))
            with torch.no_grad():
                self.with_host_generators(pipe, CallContext(device, dtype), lambda kwargs: pipe(**kwargs))
        except Exception as exc:  # the caller tries generated inputs, then the next sibling
            return pipe, exc.error if isinstance(exc, Uncallable) else exc  # the prelude's raise, at its site
        return pipe, None

    def _of(self) -> str:
        """Whose siblings: its family's, or (other_family) their module's."""
        standins = f", nor a stand-in tester of {self.untested.family}," if self.untested.standins else ""
        if not self.untested.other_family:
            return f"{self.untested.family}{standins}"
        module = Path(inspect.getfile(self.untested.parent)).name
        return f"its module {module} (no tester of {self.untested.family}){standins}"

    def _lack(self, components: dict[str, Any]) -> str:
        """What the class requires that these components and the sibling's inputs do not give ("" where nothing)."""
        required = [name for name, needed in _init_parameters(self.pipeline_class).items() if needed]
        missing = [name for name in required if name not in components]
        if missing:
            return f"needs the component(s) {', '.join(missing)}"
        wrong = [
            f"{name} ({'/'.join(m.__name__ for m in models)})"
            for name, models in _models_taken(self.pipeline_class).items()
            if isinstance(components.get(name), ModelMixin) and not isinstance(components[name], models)
        ]
        if wrong:
            return f"needs the model(s) {', '.join(wrong)}"
        inputs = self._inputs(self.instance, SimpleNamespace(device=torch.device("cpu"), seed=0))
        missing = [
            name for name in _required_call_parameters(self.pipeline_class) if name not in inputs and not knows(name)
        ]
        return f"requires the input(s) {', '.join(missing)} in __call__" if missing else ""

    def _taken(self, components: dict[str, Any]) -> dict[str, Any]:
        if _takes_any(self.pipeline_class.__init__):
            return components
        own = _init_parameters(self.pipeline_class)
        return {name: value for name, value in components.items() if name in own}

    def _given(self, inputs: dict[str, Any]) -> dict[str, Any]:
        if _takes_any(self.pipeline_class.__call__):
            return inputs
        own = _call_parameters(self.pipeline_class)
        return {name: value for name, value in inputs.items() if name in own}


@functools.lru_cache(maxsize=512)
def _call_parameters(cls: type) -> frozenset[str]:
    return _parameters(cls.__call__)


@functools.lru_cache(maxsize=512)
def _models_taken(cls: type) -> dict[str, tuple[type, ...]]:
    """The components `cls.__init__` names diffusers model classes for (a union's members; a list of them is not
    checked), by name: a sibling's model of another class (a ControlNetModel where only a ControlNetUnionModel, or a
    list or a multi-model of those, is named) does not fit."""
    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:  # an annotation that does not resolve names no class to check
        return {}
    found = {}
    for name, hint in hints.items():
        members = typing.get_args(hint) or (hint,)
        models = tuple(m for m in members if inspect.isclass(m) and issubclass(m, ModelMixin))
        if models:
            found[name] = models
    return found


def _raise_site(exc: BaseException) -> str:
    """Where `exc` was raised, blamed as an error finding is (the innermost frame outside torch and the plugin),
    inside its package (diffusers/pipelines/...:N)."""
    where, _ = attribution.attribute(attribution.frames_from_traceback(exc.__traceback__))
    return short_place(where)
