"""Tests written for a GPU give the GPU's verdicts under emulation: tests/cuda_corpus run in a real pytest session.

The corpus says "cuda" everywhere. This test runs it with `--nosync` on the backend this machine has (cuda on a
GPU, the CPU emulation otherwise) and holds each of its tests to the `# expect:` markers in its source: a bug twin
fails with exactly the expected kind at the marked line (or inside the named diffusers file), a clean twin passes.
Run on both, it shows they agree; `NOSYNC_CORPUS_REPORT=path` keeps the run's JSON report for docs/validation.md.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
from pathlib import Path

import pytest

CORPUS = Path(__file__).parent.parent / "cuda_corpus"
_EXPECT = re.compile(r"#\s*expect:\s*(?P<kind>\w+)(?:\s+in\s+(?P<file>\S+))?")


def expectations(path: Path) -> dict[str, set[tuple[str, str]]]:
    """test name → {(kind, place)}: place is `file.py:line` for a marked line, or a path suffix inside a library."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out = {}
    for node in ast.parse("\n".join(lines)).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            expected = set()
            for number in range(node.lineno, node.end_lineno + 1):
                match = _EXPECT.search(lines[number - 1])
                if match:
                    expected.add((match["kind"], match["file"] or f"{path.name}:{number}"))
            out[node.name] = expected
    return out


def _observed(test: dict) -> set[tuple[str, str]]:
    return {(f["kind"], f["where"]) for f in test["findings"] if f["status"] == "fail"}


def _places(observed: set[tuple[str, str]], expected: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The observed findings in the expectations' terms: `file.py:line` in the corpus, the expected library path
    suffix elsewhere (the whole path when none fits, so that it shows as unexpected)."""
    suffixes = [place for _, place in expected if place.endswith(".py")]
    out = set()
    for kind, where in observed:
        filename = where.rsplit(":", 1)[0].replace(os.sep, "/")
        library = next((s for s in suffixes if filename.endswith(s)), None)
        out.add((kind, library or (Path(where).name if Path(filename).parent == Path.cwd() else where)))
    return out


def test_the_corpus_has_enough_patterns() -> None:
    found = {name: e for path in CORPUS.glob("corpus_*.py") for name, e in expectations(path).items()}
    assert sum(1 for e in found.values() if e and all(p.count(":") for _, p in e)) >= 12  # planted syncs
    assert sum(1 for e in found.values() if not e) >= 5  # clean twins
    assert sum(1 for e in found.values() if any(p.endswith(".py") for _, p in e)) >= 2  # scheduler cases


def test_cuda_written_tests_get_the_gpus_verdicts(pytester: pytest.Pytester) -> None:
    expected = {}
    for path in sorted(CORPUS.glob("corpus_*.py")):
        shutil.copy(path, pytester.path / f"test_{path.name}")
        expected.update(expectations(pytester.path / f"test_{path.name}"))
    report = pytester.path / "corpus-report.json"
    result = pytester.runpytest("--nosync", f"--nosync-report={report}", "-p", "no:cacheprovider")
    doc = json.loads(report.read_text())
    keep = os.environ.get("NOSYNC_CORPUS_REPORT")
    if keep:
        shutil.copy(report, keep)
    tests = {t["test_id"].split("::")[-1]: t for t in doc["tests"]}
    assert set(tests) == set(expected), result.stdout.str()[-3000:]
    wrong = []
    for name, want in sorted(expected.items()):
        test, observed = tests[name], _observed(tests[name])
        if not want and not test["passed"]:
            wrong.append(f"{name}: a clean twin failed: {observed or test['not_checked']}")
        elif want and _places(observed, want) != want:
            wrong.append(f"{name}: expected {sorted(want)}, got {sorted(observed)}")
    assert not wrong, "\n".join(wrong)
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == sum(1 for e in expected.values() if e)
    assert outcomes.get("passed", 0) == sum(1 for e in expected.values() if not e)
