"""The built-in suite's test modules are collected by module name, not by path.

Collected by path, pytest's default import mode puts the directory above the outermost package of a test module
first on sys.path: for the suite, the directory pytest-nosync is installed in. Where a released diffusers is installed
beside it (site-packages, `pip install --target`), that diffusers then shadowed the contributor's checkout given on
PYTHONPATH, and `--nosync-suite` judged the release instead of the branch, green. So the directories of this package
are plain directories to pytest (a Package would import its `__init__.py` by path, with the same insertion), and the
suite's modules are imported as `pytest_nosync.suite.<name>`, the package this plugin was loaded from. sys.path stays
as the user set it, for this process and for the graph helpers, which start on it.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

from ..suite import SUITE_DIR

PACKAGE_DIR = SUITE_DIR.parent


def directory(path: Path, parent: pytest.Collector) -> pytest.Dir | None:
    """A plain directory collector for this package's directories on the way to the suite (None: any other)."""
    return pytest.Dir.from_parent(parent, path=path) if path.resolve() in (PACKAGE_DIR, SUITE_DIR) else None


def module(module_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    """The collector of one of the suite's test modules (None: any other module)."""
    return SuiteModule.from_parent(parent, path=module_path) if module_path.resolve().parent == SUITE_DIR else None


class SuiteModule(pytest.Module):
    """A suite module imported by its name in this package; pytest's import by path would touch sys.path."""

    def _getobj(self) -> ModuleType:
        imported = importlib.import_module(f"{__package__.rpartition('.')[0]}.suite.{self.path.stem}")
        self.config.pluginmanager.consider_module(imported)  # what pytest does for a module it imports itself
        return imported
