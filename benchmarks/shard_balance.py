"""How well one machine's durations pack another's shards: a computation on two durations files.

    python benchmarks/shard_balance.py PACKED_BY.json TIMED_BY.json [--shards 2,4,8]

Packs the test modules both files time with `census.shards.pack` by PACKED_BY's seconds (as `--nosync-shard` does
with `--nosync-durations`), then sums each shard's modules by TIMED_BY's seconds and prints the slowest shard against
the mean, beside the same for shards packed by TIMED_BY's own seconds. A CI matrix packs by durations an earlier run
recorded on whatever runner it had: this says what that costs. The folders a family exporting an untested class keeps
together (`kin`) are not read: the files hold node ids, not the checkout.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Iterable, Mapping

from pytest_nosync import ids
from pytest_nosync.census import shards


def spread(packed_by: Mapping[str, float], timed_by: Mapping[str, float], count: int) -> float:
    """The slowest of `count` shards packed by `packed_by`, timed by `timed_by`, over their mean."""
    modules = sorted(_modules(packed_by) & _modules(timed_by))
    plan = shards.pack(modules, packed_by, count)
    seconds, _ = shards.module_seconds(modules, timed_by)
    loads = [sum(seconds[m] for m in shard) for shard in plan.shards]
    return max(loads) / statistics.mean(loads)


def _modules(durations: Mapping[str, float]) -> set[str]:
    return {ids.node_path(ids.plain_nodeid(node)) for node in durations}


def table(packed_by: Mapping[str, float], timed_by: Mapping[str, float], counts: Iterable[int]) -> list[str]:
    rows = ["| shards | slowest / mean, packed by the first | packed by the second's own |", "| --- | --- | --- |"]
    for n in counts:
        rows.append(f"| {n} | {spread(packed_by, timed_by, n):.3f} | {spread(timed_by, timed_by, n):.3f} |")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packed_by", help="durations file the shards are packed by")
    parser.add_argument("timed_by", help="durations file the shards are timed by (another machine's run)")
    parser.add_argument("--shards", default="2,4,8", help="shard counts, comma-separated")
    args = parser.parse_args()
    first, second = shards.read_durations(args.packed_by), shards.read_durations(args.timed_by)
    print("\n".join(table(first, second, [int(n) for n in args.shards.split(",")])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
