"""benchmarks/shard_balance.py: shards packed by one machine's durations, timed by another's."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "shard_balance.py"
spec = importlib.util.spec_from_file_location("shard_balance", SCRIPT)
shard_balance = importlib.util.module_from_spec(spec)
spec.loader.exec_module(shard_balance)


def _durations(seconds: dict[str, float]) -> dict[str, float]:
    return {f"tests/pipelines/{m}/test_{m}.py::T::nosync[syncs]": s for m, s in seconds.items()}


def test_the_same_durations_pack_evenly_and_a_host_twice_as_slow_keeps_the_balance() -> None:
    recorded = _durations({"a": 4.0, "b": 3.0, "c": 3.0, "d": 2.0})
    assert shard_balance.spread(recorded, recorded, 2) == 1.0  # a+d against b+c
    slower = {node: 2 * s for node, s in recorded.items()}
    assert shard_balance.spread(recorded, slower, 2) == 1.0


def test_a_class_slower_only_elsewhere_unbalances_the_shards_it_lands_in() -> None:
    recorded = _durations({"a": 4.0, "b": 3.0, "c": 3.0, "d": 2.0})
    elsewhere = _durations({"a": 8.0, "b": 3.0, "c": 3.0, "d": 2.0})  # a+d = 10 against b+c = 6
    assert shard_balance.spread(recorded, elsewhere, 2) == 10 / 8
    assert shard_balance.spread(elsewhere, elsewhere, 2) < 10 / 8  # packed by its own seconds: a alone
    rows = shard_balance.table(recorded, elsewhere, [2])
    assert rows[-1] == "| 2 | 1.250 | 1.000 |"
    uneven = _durations({"a": 5.0, "b": 3.0, "c": 3.0, "d": 2.0})  # packed by its own: a+d = 7 against b+c = 6
    assert shard_balance.table(recorded, uneven, [2])[-1] == "| 2 | 1.077 | 1.077 |"  # its own, not the first's
