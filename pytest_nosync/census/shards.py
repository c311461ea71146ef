"""The census in shards (`--nosync-shard=K/N`): which test modules of a checkout the K-th of N machines collects.

Pure: no pytest, no torch. A shard holds whole test modules, so a tester class (one module's) is never split and a
shard imports only its own modules. Modules are packed longest-first from recorded durations (pytest-split's format:
a JSON object of node id → seconds, written by any census run with `--nosync-durations`), a family folder kept in one
shard unless it alone is more than a shard's share; a module without a recorded duration counts the mean of those
with one. The same modules and durations give the same shards on every machine (every order is by name).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from .. import ids
from ..ids import Shard

Durations = dict[str, float]  # node id → seconds, pytest-split's `.test_durations`


class ShardError(ValueError):
    """A shard, a durations file or a plan that cannot be used; the message says why, one sentence."""


def read_durations(path: str) -> Durations:
    """A durations file's node ids and seconds; {} where there is none yet (the first run writes it)."""
    try:
        with open(path, encoding="utf-8") as fh:
            raw = json.load(fh)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ShardError(f"cannot read the durations file {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ShardError(f"the durations file {path} is not JSON ({exc})") from None
    valid = isinstance(raw, dict) and all(isinstance(k, str) and _seconds(v) for k, v in raw.items())
    if not valid:
        raise ShardError(f"the durations file {path} is not a JSON object of node id → seconds (pytest-split's format)")
    return {k: float(v) for k, v in raw.items()}


def _seconds(value: object) -> bool:
    """A number of seconds: finite, not negative, not a bool (an int too large for a float is none)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value) and value >= 0
    except OverflowError:  # an int of 400 digits: math.isfinite converts it to a float
        return False


def write_durations(path: str, durations: Mapping[str, float]) -> None:
    """The file, sorted by node id (a diff between two runs' files is readable); written whole, then renamed."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump({k: round(durations[k], 3) for k in sorted(durations)}, fh, indent=1)
        fh.write("\n")
    os.replace(tmp, path)


def family(module: str) -> str:
    """A test module's family folder: `tests/pipelines/flux` of `tests/pipelines/flux/test_pipeline_flux.py`."""
    return str(PurePosixPath(module).parent)


def module_seconds(modules: Iterable[str], durations: Mapping[str, float]) -> tuple[dict[str, float], int]:
    """Each module's recorded seconds (its node ids' sum), the mean for one without any; and how many had none."""
    return _seconds_by(ids.node_path, modules, durations)


def class_seconds(classes: Iterable[str], durations: Mapping[str, float]) -> dict[str, float]:
    """Each census tester class's recorded seconds (its items' sum), the mean of the recorded ones for a class without
    any: what a run's workers take longest first (its items land on one worker together, as in a shard)."""
    return _seconds_by(_tester_of, classes, durations)[0]


def _tester_of(nodeid: str) -> str | None:
    census = ids.parse(nodeid)
    return census.tester if census is not None else None


def _seconds_by(
    key_of: Callable[[str], str | None], keys: Iterable[str], durations: Mapping[str, float]
) -> tuple[dict[str, float], int]:
    """Each of `keys`' recorded seconds (the sum of the node ids `key_of` gives it), the mean of the recorded ones for
    a key without any; and how many had none."""
    wanted = set(keys)
    recorded: dict[str, float] = {}
    for nodeid in sorted(durations):
        key = key_of(ids.plain_nodeid(nodeid))
        if key in wanted:
            recorded[key] = recorded.get(key, 0.0) + durations[nodeid]
    mean = sum(recorded.values()) / len(recorded) if recorded else 1.0
    return {k: recorded.get(k, mean) for k in sorted(wanted)}, len(wanted) - len(recorded)


@dataclass(frozen=True)
class Plan:
    """Every shard's modules (sorted) and estimated seconds, and how many modules counted the mean."""

    shards: tuple[tuple[str, ...], ...]
    seconds: tuple[float, ...]
    estimated: int

    def modules(self, shard: Shard) -> tuple[str, ...]:
        return self.shards[shard.index - 1]

    @property
    def fingerprint(self) -> str:
        """The same for every shard of one plan, and different for another split or selection of modules."""
        return hashlib.sha256(json.dumps(self.shards).encode()).hexdigest()[:16]

    def header(self, shard: Shard) -> str:
        modules = self.modules(shard)
        families = len({family(m) for m in modules})
        mean = f", {self.estimated} module(s) without one counted at the mean" if self.estimated else ""
        return (
            f"nosync: shard {shard}: {len(modules)} test module(s) of {families} family folder(s), "
            f"~{self.seconds[shard.index - 1]:.0f} s of recorded durations{mean} (plan {self.fingerprint})"
        )


def pack(
    modules: Iterable[str], durations: Mapping[str, float], count: int, kin: Mapping[str, Iterable[str]] | None = None
) -> Plan:
    """The modules in `count` shards, longest first into the least loaded (the lowest index on a tie); a family
    folder stays whole unless it alone is more than a shard's share of the total. `kin`: a module's diffusers
    families that export a class no tester names (census.untested.module_families); folders whose modules share one
    are one family here, never split, so that such a class is planned in one shard, through the sibling one run
    takes (balance gives way to that)."""
    kin = kin or {}
    seconds, estimated = module_seconds(modules, durations)
    share = sum(seconds.values()) / count
    joined = _joined_folders(seconds, kin)
    by_family: dict[str, list[str]] = {}
    for module in seconds:  # sorted
        by_family.setdefault(joined[family(module)], []).append(module)
    units: list[tuple[float, str, list[str]]] = []
    for name, members in sorted(by_family.items()):
        total = sum(seconds[m] for m in members)
        if total > share and len(members) > 1 and not any(kin.get(m) for m in members):
            units += [(seconds[m], m, [m]) for m in members]
        else:
            units.append((total, name, members))
    loads = [0.0] * count
    shards: list[list[str]] = [[] for _ in range(count)]
    for cost, _, members in sorted(units, key=lambda unit: (-unit[0], unit[1])):
        lightest = min(range(count), key=lambda i: (loads[i], i))
        loads[lightest] += cost
        shards[lightest] += members
    return Plan(tuple(tuple(sorted(s)) for s in shards), tuple(round(load, 3) for load in loads), estimated)


def _joined_folders(modules: Iterable[str], kin: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """Each module's folder → the first (sorted) of the folders joined to it by a shared kin, transitively."""
    kins: dict[str, set[str]] = {}
    for module in modules:
        kins.setdefault(family(module), set()).update(kin.get(module, ()))
    first: dict[str, str] = {}
    for folder in sorted(kins):
        if folder in first:
            continue
        group, todo, seen = {folder}, [folder], set(kins[folder])
        while todo:
            todo.pop()
            for other in sorted(kins):
                if other not in group and other not in first and kins[other] & seen:
                    group.add(other)
                    todo.append(other)
                    seen |= kins[other]
        first.update(dict.fromkeys(group, folder))
    return first


def check_durations_name(durations: Mapping[str, float], modules: Iterable[str], path: str) -> None:
    """A durations file that names no test module of this selection was written for another checkout or paths."""
    modules = set(modules)
    if durations and module_seconds(modules, durations)[1] == len(modules):
        raise ShardError(
            f"the durations file {path} names no tester class of the selected test modules: it was written for "
            "another checkout or other test paths"
        )
