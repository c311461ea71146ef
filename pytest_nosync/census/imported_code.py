"""The files whose module-level data the recorded code reads without running any of their functions.

A record (executed_code) holds the functions a tester's pipeline ran. A module none of whose functions ran there is
in no record: one of constants only, read when diffusers was imported, before the record began. Its names reach the
recorded code through imports, so the imports say where: each name a recorded file imports (at module level, or
inside a function that ran) is followed through the modules that re-export it to the file that binds it, and where
that binding is data (an assignment) or a module, that file is a dependency: its module-level lines count. Not:

- a function or a class: its code is in the record where it runs (a test module imports dozens of pipeline classes
  it never runs; counting them made a change to any of their modules' imports select every tester);
- a package's `__init__.py`, reached as a re-exporter or imported whole: what it binds itself is the package's face
  (its version, its lazy import table), which every new pipeline edits;
- a base class none of whose methods ran, imported alone: its class attributes are read, but its module counts only
  where the code imports data from it too (counting every base's module would make each new LoRA mixin class,
  module-level code in loaders/lora_pipeline, select every pipeline with one);
- the modules a dependency imports in turn: one step only (following them took a record of Wan from 28 files to 830,
  every pipeline diffusers has). A constant computed at import from another module's constant is found where it is
  bound, not where its parts are.

Only files under the record's roots count. Read from the source with `ast`, nothing imported: a name bound some other
way (a module `__getattr__`) is taken from the module that was imported.
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

Anchors = list[tuple[str, str]]  # (root directory, its package name), as executed_code keys files
Lines = tuple[tuple[int, int], ...]
_MOST_HOPS = 16  # re-exports followed for one name (a chain longer than this is a cycle the source would not import)


@dataclass
class _Bindings:
    """A file's module-level names: those it binds to data (assignments), to code (functions, classes, modules), those
    it takes from another module, and its star imports."""

    data: set[str] = field(default_factory=set)
    code: set[str] = field(default_factory=set)
    taken: dict[str, tuple[str, str]] = field(default_factory=dict)  # name → (module, name there; "": the module)
    stars: list[str] = field(default_factory=list)  # the last one first

    def bind(self, name: str, kind: str, source: tuple[str, str] | None = None) -> None:
        """`name` bound again, in source order: the last binding is the one the module's users see."""
        self.data.discard(name)
        self.code.discard(name)
        self.taken.pop(name, None)
        if kind == "taken" and source is not None:
            self.taken[name] = source
        else:
            (self.data if kind == "data" else self.code).add(name)


def imported_files(ran: dict[str, tuple[Lines, Lines]], anchors: Anchors) -> frozenset[str]:
    """The files under `anchors` whose module-level code the files in `ran` depend on (see the module doc), not those
    files themselves. `ran`: each recorded file with (the lines of its functions, those of its functions that ran)."""
    found: set[str] = set()
    for file, (functions, lines) in ran.items():
        for module, name in _imports(file, functions, lines, anchors):
            target, bound = _binder(module, name, anchors)
            if target is None or target in ran or os.path.basename(target) == "__init__.py":
                continue  # outside the roots, recorded already, or a package's face (its re-exports, its version)
            if bound and bound in _bindings(target, _package(target, anchors)).code:
                continue  # a function or a class: its code is in the record where it runs
            found.add(target)
    return frozenset(found)


def _imports(file: str, functions: Lines, ran: Lines, anchors: Anchors) -> list[tuple[str, str]]:
    """(module, name) of each import in `file` at module level or inside a function that ran (name "": the module
    itself), absolute."""
    stamp = file_stamp(file)
    if stamp is None:
        return []
    return [
        (module, name)
        for line, module, name in _import_table(file, _package(file, anchors), *stamp)
        if any(first <= line <= last for first, last in ran)
        or not any(first <= line <= last for first, last in functions)
    ]


@functools.lru_cache(maxsize=4096)
def _import_table(file: str, package: str, mtime_ns: int, size: int) -> tuple[tuple[int, str, str], ...]:
    """(line, module, name) of every import in the file, absolute (name "": the module)."""
    tree = _parsed(file, mtime_ns, size)
    table: list[tuple[int, str, str]] = []
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Import):
            table.extend((node.lineno, alias.name, "") for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (module := _absolute(node, package)) is not None:
            table.extend((node.lineno, module, "" if a.name == "*" else a.name) for a in node.names)
    return tuple(table)


def _binder(module: str, name: str, anchors: Anchors, hops: int = 0) -> tuple[str | None, str]:
    """(the file that binds `name` in `module`, the name there), followed through re-exports: the module's own file
    for name "", or its submodule of that name (name ""); None outside the roots."""
    if name:
        submodule = _file_of(f"{module}.{name}", anchors)
        if submodule is not None:
            return submodule, ""
    file = _file_of(module, anchors)
    if file is None or not name or hops >= _MOST_HOPS:
        return file, name
    bindings = _bindings(file, _package(file, anchors))
    if name in bindings.data or name in bindings.code:
        return file, name
    if name in bindings.taken:
        source, original = bindings.taken[name]
        return _binder(source, original, anchors, hops + 1)  # None: bound outside the roots
    for star in bindings.stars:  # the first star-imported module that binds the name
        found, bound = _binder(star, name, anchors, hops + 1)
        if found is not None and bound:
            return found, bound
    return file, ""  # bound some other way (a module __getattr__): the module imported


def _bindings(file: str, package: str) -> _Bindings:
    stamp = file_stamp(file)
    return _bindings_cached(file, package, *stamp) if stamp is not None else _Bindings()


@functools.lru_cache(maxsize=4096)
def _bindings_cached(file: str, package: str, mtime_ns: int, size: int) -> _Bindings:
    bindings = _Bindings()
    tree = _parsed(file, mtime_ns, size)
    for node in _module_level(tree.body if tree is not None else []):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bindings.bind(node.name, "code")
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for name in (n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)):
                bindings.bind(name, "data")
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, package)
            for alias in node.names:
                if module is not None and alias.name == "*":
                    bindings.stars.insert(0, module)  # a later star import's names shadow an earlier one's
                elif module is not None:
                    bindings.bind(alias.asname or alias.name, "taken", (module, alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:  # `import a.b as c` binds the module a.b; `import a.b` binds the package a
                if alias.asname:
                    bindings.bind(alias.asname, "taken", (alias.name, ""))
                else:
                    bindings.bind(alias.name.split(".")[0], "code")
    return bindings


def _module_level(statements: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The module's statements in source order, into the blocks that run at import (TYPE_CHECKING branches, optional
    imports, loops), not into functions or classes."""
    for node in statements:
        yield node
        for block in ("body", "orelse", "finalbody"):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield from _module_level(getattr(node, block, None) or [])
        for handler in getattr(node, "handlers", None) or []:  # try / except (and except*)
            yield from _module_level(handler.body)
        for case in getattr(node, "cases", None) or []:  # match
            yield from _module_level(case.body)


def _absolute(node: ast.ImportFrom, package: str) -> str | None:
    if not node.level:
        return node.module
    parts = package.split(".") if package else []
    if node.level - 1 >= len(parts):  # above the top package
        return None
    base = parts[: len(parts) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _package(file: str, anchors: Anchors) -> str:
    """The package a file's relative imports start from ("" outside the roots)."""
    for root, name in anchors:
        if file.startswith(root + os.sep):
            parts = [name, *Path(file[len(root) + 1 :]).with_suffix("").parts]
            return ".".join(parts[:-1])
    return ""


@functools.lru_cache(maxsize=8192)
def _file_of_cached(module: str, anchors: tuple[tuple[str, str], ...]) -> str | None:
    head, _, rest = module.partition(".")
    for root, name in anchors:
        if head != name:
            continue
        base = Path(root, *rest.split(".")) if rest else Path(root)
        for candidate in (base.with_suffix(".py") if rest else None, base / "__init__.py"):
            if candidate is not None and os.path.isfile(candidate):  # False for any OSError (a name too long)
                return str(candidate)
    return None


def _file_of(module: str, anchors: Anchors) -> str | None:
    return _file_of_cached(module, tuple(anchors))


@functools.lru_cache(maxsize=1024)
def _parsed(file: str, mtime_ns: int, size: int) -> ast.Module | None:
    """The file's syntax tree, once per version of it (its stamp); None where it cannot be read or parsed."""
    try:
        return ast.parse(Path(file).read_bytes(), file)
    except (OSError, SyntaxError, ValueError, RecursionError):  # RecursionError: an expression nested too deep
        return None


def file_stamp(file: str) -> tuple[int, int] | None:
    """(mtime_ns, size) of a file, None where it cannot be read: a cache key that changes with the file."""
    try:
        stat = os.stat(file)
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size)


__all__ = ["file_stamp", "imported_files"]
