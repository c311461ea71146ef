"""What an installed pytest-nosync costs a pytest run that does not check: a one-test project run with the plugin and
with `-p no:nosync`, in interleaved pairs (each pair's ratio, then their median: the machine's drift cancels out).

    python benchmarks/plugin_off.py [--pairs 15] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _run(project: Path, *args: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=project,
                   capture_output=True, check=True)  # fmt: skip
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=15)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "test_one.py").write_text("def test_ok():\n    pass\n")
        _run(project)  # bytecode caches warm for both
        pairs = [(_run(project), _run(project, "-p", "no:nosync")) for _ in range(args.pairs)]
    result = {
        "pairs": args.pairs,
        "with_plugin_s": round(statistics.median(on for on, _ in pairs), 4),
        "without_s": round(statistics.median(off for _, off in pairs), 4),
        "ratio": round(statistics.median(on / off for on, off in pairs), 3),
    }
    print(json.dumps(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
