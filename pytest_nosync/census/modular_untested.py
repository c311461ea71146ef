"""The ModularPipeline classes diffusers exports that no modular tester config names, checked through a sibling
config of their family, or counted with the reason they cannot be.

A ModularPipeline class names its blocks (`default_blocks_name`: the blocks its `__init__` builds when given none, as
a load from a repository without a `modular_model_index.json` does). Such a class is built as diffusers builds it,
with those blocks, from the components of a sibling config's repository stand-in (census.hub_standins.modular_repos;
those its blocks expect) and called with that config's `get_dummy_inputs` (those its blocks take). The siblings are
the run's modular configs whose pipeline class is of the same family (the package of `diffusers.modular_pipelines`
that exports it), best first by the components their blocks share with the class's; the first whose stand-in builds
and with which a plain call returns is the one checked through; a class released in a repository of its own that no
sibling's components fit (hub_standins.modular_repos.RELEASED_IN) is given that repository's stand-in in place of each
sibling config's, with the sibling's inputs. The steps are its loop blocks', as a config's
(census.modular). Where no config of its family fits (its blocks load a component the configs' repositories lack:
Wan 2.2's second transformer, Wan's image encoder), the run's classic testers of the family come next, best first by
the components their pipeline takes: their dummy components and inputs are what a family's tiny modular repository
holds, as a config's stand-in is. A class with no blocks to build, no sibling in the run, or a raise with every
sibling's components and inputs, is counted with that reason, never passed.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import diffusers
import torch

from ..suite.targets.base import CallContext
from .hub_standins.modular_repos import RELEASED_IN, NoStandIn, components_for
from .modular import REPO, ModularTester, provider, ready
from .testers import NotDrivable, Tester, _input_binder, _reason, tester_name, untested_name
from .untested import Exported, Plan, Untested, _init_parameters, _raise_site


@dataclass(frozen=True)
class ModularUntested(Untested):
    """A ModularPipeline class no config names, to be driven with its default blocks (`blocks_class`) through the
    run's modular configs of its family (`siblings`, best first)."""

    blocks_class: type | None = None

    def driver(self) -> Tester:
        """Its driver, through its family's modular configs or classic testers."""
        return UntestedModularTester(self)


def plan(classic: Plan, configs: Iterable[type], named: Iterable[str], testers: Iterable[type] = ()) -> Plan:
    """The run's plan: `classic` (census.untested.plan, which counts every ModularPipeline class no config names
    under one reason) with each such class given to the run's modular `configs` of its family, then its classic
    `testers` (where the run has neither, the stand-in testers `classic` builds the family's classic classes through,
    under their host), to be driven through, or its own reason. `named`: the pipeline classes the run's testers and
    configs, and those of their folders, name."""
    configs, testers, named = list(configs), list(testers), set(named)
    by_name = {entry.name: entry for entry in classic.exported}
    untested = list(classic.untested)
    reasons = dict(classic.reasons)
    for entry in classic.exported:
        if not entry.modular or entry.name in named:
            continue
        reasons.pop(entry.name, None)
        blocks = default_blocks(entry.pipeline_class)
        family = [config for config in configs if _family(config, by_name) == entry.family]
        kin = [tester for tester in testers if _classic_family(tester, by_name) == entry.family]
        host, standins = (None, ()) if family or kin else _stood_in(classic.untested, entry.family)
        if blocks is None:
            reasons[entry.name] = (
                f"its default_blocks_name ({getattr(entry.pipeline_class, 'default_blocks_name', None)}) names no "
                "blocks class diffusers exports: no blocks to build it with"
            )
        elif not family and not kin and not standins:
            reasons[entry.name] = (
                f"no modular tester config, classic tester or stand-in tester of its family ({entry.family}) in this "
                "run to take components and inputs from"
            )
        else:
            ranked = sorted(family, key=lambda config: _rank(blocks, config))
            ranked += sorted([*kin, *standins], key=lambda tester: _classic_rank(blocks, tester))
            untested.append(ModularUntested(entry.pipeline_class, entry.family, tuple(ranked), host=host,
                                            standins=tuple(standins), blocks_class=blocks))  # fmt: skip
    return replace(classic, untested=untested, reasons=reasons)


def default_blocks(pipeline_class: type) -> type | None:
    """The blocks class `pipeline_class` builds when given none (`default_blocks_name`): one diffusers exports, or one
    of the class's own module."""
    name = getattr(pipeline_class, "default_blocks_name", None)
    if not isinstance(name, str):
        return None
    module = sys.modules.get(pipeline_class.__module__)
    found = getattr(module, name, None) or getattr(diffusers, name, None)
    return found if inspect.isclass(found) else None


def _family(config: type, exported: Mapping[str, Exported]) -> str | None:
    pipeline = inspect.getattr_static(config, "pipeline_class", None)
    entry = exported.get(getattr(pipeline, "__name__", ""))
    return entry.family if entry is not None and entry.modular else None


def _stood_in(classic: Iterable[Untested], family: str) -> tuple[type | None, tuple[type, ...]]:
    """Where a family's classes are built only through stand-in testers (census.standin_testers): the run tester the
    classic plan hosts them under, and those stand-ins; (None, ()) where none is."""
    for entry in classic:
        if entry.family == family and entry.standins:
            return entry.parent, entry.standins
    return None, ()


def _classic_family(tester: type, exported: Mapping[str, Exported]) -> str | None:
    pipeline = inspect.getattr_static(tester, "pipeline_class", None)
    for cls in getattr(pipeline, "__mro__", ()):  # a test's own subclass runs its diffusers class
        entry = exported.get(cls.__name__)
        if entry is not None and not entry.modular:
            return entry.family
    return None


def _classic_rank(blocks: type, tester: type) -> tuple[int, int, str]:
    """A classic tester's rank for a class of these blocks (lower first): the components the blocks load that its
    pipeline does not take, then how few they share, then its name."""
    own, theirs = _loaded(blocks), set(_init_parameters(inspect.getattr_static(tester, "pipeline_class")))
    return (len(own - theirs), -len(own & theirs), tester_name(tester))


def _rank(blocks: type, config: type) -> tuple[int, int, int, str]:
    """A sibling config's rank for a class of these blocks (lower first): whether its repository has a stand-in here,
    the components the class's blocks load that the config's blocks do not, then how few they share, then its name."""
    try:
        components_for(inspect.getattr_static(config, REPO))
        standin = 0
    except NoStandIn:
        standin = 1
    own, theirs = _loaded(blocks), _loaded(inspect.getattr_static(config, "pipeline_blocks_class"))
    return (standin, len(own - theirs), -len(own & theirs), tester_name(provider(config) or config))


def _loaded(blocks: type) -> set[str]:
    """The components these blocks load from a repository (their `from_pretrained` specs); empty where the blocks
    cannot be built."""
    try:
        specs = blocks().expected_components
    except Exception:  # blocks that cannot be built share nothing; their build says why when it is tried
        return set()
    return {spec.name for spec in specs if spec.default_creation_method == "from_pretrained"}


class UntestedModularTester(ModularTester):
    """A ModularPipeline class no config names, driven as a modular config: its default blocks, the components of the
    first sibling that fits (a config's stand-in, or a classic tester's dummy components: those its blocks expect) and
    that sibling's inputs (those its blocks take), the first with which a plain call returns. Where none builds,
    NotDrivable with the first sibling's lack; where none returns, NotDrivable with the first one's raise and the
    components its sibling lacks."""

    def __init__(self, untested: ModularUntested) -> None:
        self.untested = untested
        first = untested.siblings[0]
        self.name = untested_name(provider(first) or first, untested.name)
        self.pipeline_class = untested.pipeline_class
        self.blocks_class = untested.blocks_class
        self.calibration = None
        self._use(first)
        self._chosen: type | None = None

    def _use(self, sibling: type) -> None:
        self.cls, self._instance = sibling, None
        self.repo = inspect.getattr_static(sibling, REPO, None)  # None: a classic tester (or stand-in tester)
        if self.repo is not None:  # a class released in a repository of its own is built from its stand-in
            self.repo = RELEASED_IN.get(self.pipeline_class.__name__, self.repo)
        self._inputs = _input_binder(sibling.get_dummy_inputs)

    @property
    def standing_in(self) -> str:
        """The stand-in tester it is built through (census.standin_testers), by name; "" for another sibling."""
        return self.untested.standing_in(self._chosen)

    def report_facts(self) -> dict[str, Any]:
        """A modular config's facts, and the stand-in tester it is built through, where it is."""
        facts = {"standin": self.standing_in} if self.standing_in else {}
        return {**facts, **super().report_facts()}

    def components(self) -> dict[str, Any]:
        """The sibling config's stand-in's components, or the classic sibling's dummy components."""
        if self.repo is not None:
            return super().components()
        try:
            return self.instance.get_dummy_components()
        except Exception as exc:  # the sibling's own components fail to build: no verdict on the class
            raise NotDrivable(_reason(f"{self.cls.__qualname__}.get_dummy_components()", exc)) from exc

    def build(self, device: torch.device, dtype: torch.dtype) -> Any:
        if self._chosen is None:
            return self._choose(device, dtype)
        return self._assembled(device, dtype)

    def call_kwargs(self, pipe: Any, ctx: CallContext) -> dict[str, Any]:
        """The sibling's inputs its blocks take (others would be ignored with a warning)."""
        taken = self.call_parameters(pipe)
        return {name: value for name, value in super().call_kwargs(pipe, ctx).items() if name in taken}

    def call_parameters(self, pipe: Any) -> frozenset[str]:
        """The inputs its blocks take, by name or as a group of keyword arguments (`kwargs_type`)."""
        inputs = pipe._blocks.inputs
        return frozenset(p.name for p in inputs if p.name) | frozenset(p.kwargs_type for p in inputs if p.kwargs_type)

    def _assembled(self, device: torch.device, dtype: torch.dtype) -> Any:
        """The class with its default blocks, given the sibling's stand-in's components its blocks expect."""
        try:
            pipe = self.pipeline_class(blocks=self.blocks_class())
        except Exception as exc:  # blocks that cannot be built are no verdict on the class's call
            raise NotDrivable(_reason(f"{self.pipeline_class.__name__} with its blocks {self.blocks_class.__name__}",
                                      exc)) from exc  # fmt: skip
        given = self.components()
        try:
            pipe.update_components(**{name: value for name, value in given.items() if name in pipe._component_specs})
        except Exception as exc:  # components its blocks refuse are the stand-in's misfit, not the class's raise
            source = f"the stand-in of {self.repo}" if self.repo is not None else _given(self.cls, None)
            raise NotDrivable(_reason(f"{source} in {self.pipeline_class.__name__}", exc)) from exc
        return ready(pipe, device, dtype)

    def _lacking(self, pipe: Any) -> list[str]:
        """The components its blocks load from a repository that the sibling's stand-in does not give."""
        return sorted(name for name in _loaded(self.blocks_class) if getattr(pipe, name, None) is None)

    def _choose(self, device: torch.device, dtype: torch.dtype) -> Any:
        lacks, raised = [], []
        for sibling in self.untested.siblings:
            self._use(sibling)
            try:
                pipe = self._assembled(device, dtype)
            except NotDrivable as exc:  # this sibling's stand-in cannot be had or does not fit: the next is tried
                lacks.append(str(exc))
                continue
            try:  # a raise with this sibling's components and inputs tries the next
                with torch.no_grad():
                    pipe(**self.call_kwargs(pipe, CallContext(device, dtype)))
            except Exception as exc:
                raised.append((sibling, self.repo, exc, self._lacking(pipe)))
                continue
            self._chosen = sibling
            return pipe
        if not raised:
            raise NotDrivable(lacks[0])
        # a raise with a sibling's components and inputs is theirs as much as the class's: its reason, never a pass
        sibling, repo, exc, lacking = raised[0]
        without = f" (without {', '.join(lacking)})" if lacking else ""
        others = " (and every other sibling's)" if len(raised) > 1 else ""
        unbuilt = f"; {len(lacks)} other sibling(s) not built here: {lacks[0]}" if lacks else ""
        raise NotDrivable(
            f"with {_given(sibling, repo)}{without} and its inputs{others}, "
            f"{_reason('a plain call', exc)} at {_raise_site(exc)}{unbuilt}"
        )


def _given(sibling: type, repo: str | None) -> str:
    """Where the components given with a sibling's inputs come from (`repo`: its stand-in's), for a reason."""
    if repo is None:
        return f"the dummy components of its classic sibling {sibling.__qualname__}"
    if repo != inspect.getattr_static(sibling, REPO, None):
        return f"the stand-in of its own repository {repo} in place of its sibling {sibling.__qualname__}'s"
    return f"the components of its sibling {sibling.__qualname__}'s stand-in"
