"""One JSON document per run: the environment (detection.devices.environment) and every finding of every test; and which
diffusers is under test, read without importing it."""

from __future__ import annotations

import contextlib
import gzip
import importlib.metadata
import importlib.util
import json
import os
import re
import sys
import zlib
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from .findings import SCHEMA_VERSION, Report

SCHEMA = f"pytest-nosync/{SCHEMA_VERSION}"  # a report's "schema": the one this version writes and reads
_VERSION = re.compile(r"""^__version__\s*=\s*["']([^"']+)["']""", re.MULTILINE)


def _diffusers_origin() -> str | None:
    """The `__init__.py` of the diffusers this process imported, or would import first (found, not imported)."""
    module = sys.modules.get("diffusers")
    if module is not None:
        return getattr(module, "__file__", None)
    try:
        spec = importlib.util.find_spec("diffusers")
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None else None


def diffusers_location() -> str | None:
    """The directory of the diffusers under test: a contributor's checkout or an installed release."""
    origin = _diffusers_origin()
    return os.path.dirname(origin) if origin else None


def diffusers_version() -> str | None:
    """The version of the diffusers under test, read from its own `__init__.py` without importing it (diffusers pulls
    in dynamo): a checkout on PYTHONPATH is its own version, not that of a release installed beside it, whose metadata
    is the answer only when the source does not say."""
    module = sys.modules.get("diffusers")
    if getattr(module, "__version__", None):
        return str(module.__version__)
    origin = _diffusers_origin()
    if origin and origin.endswith(".py"):
        with contextlib.suppress(OSError):
            match = _VERSION.search(Path(origin).read_text(encoding="utf-8"))
            if match:
                return match.group(1)
    try:
        return importlib.metadata.version("diffusers")
    except importlib.metadata.PackageNotFoundError:
        return None


def check_writable(path: str, example: str = "nosync-report.json") -> None:
    """Fail early, with a sentence, if a file cannot be written there (for a directory, `example` is the file name it
    suggests). Creates nothing: a run stopped by a usage error leaves no empty file behind."""
    target = Path(path)
    if target.is_dir():
        raise OSError(f"{path} is a directory; give a file name such as {target / example}")
    existing = target if target.exists() else target.parent
    while not existing.exists():
        existing = existing.parent
    if existing != target and not existing.is_dir():
        raise OSError(f"cannot write {path}: {existing} is a file")
    if not os.access(existing, os.W_OK):
        raise OSError(f"cannot write {path}: {existing} is not writable")


def document(reports: Iterable[Report], env: dict[str, Any], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    reports = sorted(reports, key=lambda r: (r.test_id, r.check))
    counts: dict[str, int] = {}
    for report in reports:
        for f in report.findings:
            counts[f.status] = counts.get(f.status, 0) + f.count
    return {
        "schema": SCHEMA,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "environment": env,
        "summary": {
            "tests": len(reports),
            "failed": sum(1 for r in reports if r.passed is False),
            "findings_by_status": counts,
        },
        **(extra or {}),
        "tests": [r.to_dict() for r in reports],
    }


def _text(path: str, mode: str) -> IO[str]:
    """A report's file as text: gzip-compressed where its name ends in `.gz` (a census of every scenario keeps every
    finding's stack: about 115 MB of JSON, 4.4 MB compressed)."""
    if path.endswith(".gz"):
        return gzip.open(path, mode + "t", encoding="utf-8")
    return open(path, mode, encoding="utf-8")


def write(path: str, doc: dict[str, Any]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}" + (".gz" if path.endswith(".gz") else "")  # written as the path will be read
    with _text(tmp, "w") as fh:
        json.dump(doc, fh, indent=1, default=str)
        fh.write("\n")
    os.replace(tmp, path)


def read(path: str) -> tuple[dict[str, Any], list[Report]]:
    """A report's document and its tests' reports (`.json`, or gzipped `.json.gz`). OSError when it cannot be read,
    ValueError with a sentence naming the file when it is not JSON or not a pytest-nosync report."""
    try:
        with _text(path, "r") as fh:
            doc = json.load(fh)
    except (EOFError, zlib.error) as exc:  # a .gz cut short or damaged: neither an OSError nor a JSON error
        raise OSError(f"{path} is a damaged gzip file ({exc})") from None
    if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("pytest-nosync/"):
        raise ValueError(f'{path} is not a pytest-nosync report (no "schema": "pytest-nosync/...")')
    if doc["schema"] != SCHEMA:  # another version's fields, read as this one's, would say nothing or the wrong thing
        raise ValueError(
            f"{path} is a report of schema {doc['schema']}, not {SCHEMA}: read it with the pytest-nosync that wrote it"
        )
    tests = doc.get("tests", [])
    if not isinstance(tests, list):
        raise ValueError(f"{path} is not a pytest-nosync report: 'tests' is not a list")
    try:
        return doc, [Report.from_dict(t) for t in tests]
    except (TypeError, ValueError, AttributeError) as exc:  # an entry without the fields of a Report
        raise ValueError(f"{path} is not a pytest-nosync report: a test's entry does not read as one ({exc})") from None
