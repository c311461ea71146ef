"""Command-line options and ini keys, read once into Settings. CLI wins over ini."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from .backends import BACKENDS

# (cli flag, ini key, ini type, default, help) — options whose value can also live in pyproject/pytest.ini
_OPTIONS: tuple[tuple[str, str, str, Any, str], ...] = (
    ("--nosync", "nosync", "bool", False, "turn the nosync checks on (off: marked tests run as plain tests)"),
    (
        "--nosync-mode",
        "nosync_mode",
        "string",
        None,
        "warn: collect every sync and fail once with all of them (default); "
        "error: fail fast at the first sync inside a step (the raise lands on the offending line, for --pdb)",
    ),
    (
        "--nosync-backend",
        "nosync_backend",
        "string",
        "auto",
        "cuda, emulate (CPU emulation) or auto (cuda when a GPU is visible)",
    ),
    (
        "--nosync-profile",
        "nosync_profile",
        "bool",
        False,
        "also run each guarded block under torch.profiler to confirm syncs (slower)",
    ),
    ("--nosync-report", "nosync_report", "string", None, "write one JSON report of the run to this path"),
)


@dataclass(frozen=True)
class Settings:
    enabled: bool = False
    mode: str | None = None  # None: the marker's mode, else warn
    backend: str = "auto"
    profile: bool = False
    report: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("nosync", "pytest-nosync: no CPU-GPU syncs in diffusion pipelines")
    for flag, ini, kind, default, help_text in _OPTIONS:
        if kind == "bool":
            group.addoption(flag, action="store_true", default=None, dest=ini, help=help_text)
        else:
            group.addoption(flag, action="store", default=None, dest=ini, metavar="VALUE", help=help_text)
        parser.addini(ini, help=help_text, type=kind if kind == "bool" else "string", default=default)


def _value(config: pytest.Config, name: str) -> Any:
    value = config.getoption(name)
    if value is None:
        value = config.getini(name)
    return value if value != "" else None


def read(config: pytest.Config) -> Settings:
    """Read and validate the options; bad values are usage errors naming the option."""
    mode = _value(config, "nosync_mode")
    if mode not in (None, "warn", "error"):
        raise pytest.UsageError(f"--nosync-mode must be 'warn' or 'error', got {mode!r}")
    backend = _value(config, "nosync_backend") or "auto"
    if backend not in BACKENDS:
        raise pytest.UsageError(f"--nosync-backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    return Settings(
        enabled=bool(_value(config, "nosync")),
        mode=mode,
        backend=backend,
        profile=bool(_value(config, "nosync_profile")),
        report=_value(config, "nosync_report"),
    )


SETTINGS = pytest.StashKey[Settings]()


def of(config: pytest.Config) -> Settings:
    """The run's settings (defaults when the plugin was not configured, e.g. in a bare pytester run)."""
    return config.stash.get(SETTINGS, Settings())
