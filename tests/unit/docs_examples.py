"""The code examples of README.md and docs/*.md, read as the pages write them, run, and judged by what the page says.

A fenced ```python block is preceded by a directive, an HTML comment (GitHub does not show it):

    <!-- example: test NAME; run: pytest --nosync; expect: passed=1 -->
        the block is test_NAME.py, run by `pytest -p no:cacheprovider ARGS test_NAME.py` (a session in this process)
    <!-- example: script NAME; run: python; expect: exit=0; output: passed: True* -->
        the block is NAME.py, run by `python NAME.py ARGS`
    <!-- example: fragment; why: REASON -->
        not runnable as written (a line of a table, a call with `...`), and why

A fenced ```text block may be preceded by an output directive: the block is what a command prints, each of its
non-blank lines a line of the command's stdout, in order (so a page's sample output cannot go stale):

    <!-- example: output NAME; run: pytest -m gpu --nosync ...; expect: failed=1 -->
        `pytest -p no:cacheprovider ARGS` in a directory of its own (a session in this process)

`expect:` takes NAME=N items separated by spaces or commas: pytest's outcome counts (passed, failed, errors, skipped,
xfailed, xpassed; those not named must be 0, as in `RunResult.assert_outcomes`) and `exit`, the exit status. Each
`output:` is an fnmatch pattern for a line of stdout, matched in order. Each example runs in a directory of its own,
outside this repository (its ini file and conftest do not apply), with this checkout first on the path.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
KINDS = ("test", "script", "fragment", "output")
PYTHON = ("python", "py")
OUTCOMES = ("passed", "failed", "errors", "skipped", "xfailed", "xpassed")
TIMEOUT_S = 300

_FENCE = re.compile(r"^```\s*(\S*)\s*$")
_DIRECTIVE = re.compile(r"^<!--\s*example:(.*)-->\s*$")
_KEY = re.compile(r";\s*(?=(?:run|expect|output|why):)")  # a pattern may hold ';', a key starts a new part


class DirectiveError(ValueError):
    """A directive that cannot be run as written; the message names the page and line."""


@dataclass(frozen=True)
class Example:
    page: str  # relative to the repository
    line: int  # of the directive
    kind: str  # test | script | fragment
    name: str = ""
    run: tuple[str, ...] = ()
    expect: dict[str, int] = field(default_factory=dict)
    output: tuple[str, ...] = ()
    why: str = ""
    code: str = ""

    @property
    def id(self) -> str:
        return f"{self.page}:{self.name or self.line}"

    @property
    def filename(self) -> str:
        return f"test_{self.name}.py" if self.kind == "test" else f"{self.name}.py"


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # of the opening fence
    language: str
    code: str
    directive: str | None  # the text after `example:`, when the line above the fence (blank lines aside) holds one
    directive_line: int = 0


def blocks(text: str, page: str) -> list[Block]:
    """Every fenced block of a page, with the directive above it. A directive with no block below it is an error."""
    lines = text.splitlines()
    out: list[Block] = []
    pending: tuple[str, int] | None = None
    i = 0
    while i < len(lines):
        directive = _DIRECTIVE.match(lines[i])
        fence = _FENCE.match(lines[i])
        if directive:
            if pending:
                raise DirectiveError(f"{page}:{pending[1]}: a directive with no code block below it")
            pending = (directive.group(1).strip(), i + 1)
        elif fence:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), len(lines))
            language = fence.group(1)
            if pending and language not in PYTHON and not (language == "text" and pending[0].startswith("output")):
                raise DirectiveError(f"{page}:{pending[1]}: a directive stands above a python block, not {lines[i]!r}")
            text_, at = pending or (None, 0)
            out.append(Block(page, i + 1, fence.group(1), "\n".join(lines[i + 1 : end]) + "\n", text_, at))
            pending, i = None, end
        elif pending and lines[i].strip():
            raise DirectiveError(f"{page}:{pending[1]}: a directive with no code block below it")
        i += 1
    if pending:
        raise DirectiveError(f"{page}:{pending[1]}: a directive with no code block below it")
    return out


def parse(block: Block) -> Example:
    """The example a block's directive describes; DirectiveError says what is wrong with it."""
    where = f"{block.page}:{block.directive_line}"
    head, *parts = _KEY.split(block.directive or "")
    kind, _, name = head.strip().partition(" ")
    name = name.strip()
    if kind not in KINDS:
        raise DirectiveError(f"{where}: the example's kind is one of {', '.join(KINDS)}, got {kind!r}")
    fields: dict[str, list[str]] = {}
    for part in parts:
        key, _, value = part.partition(":")
        fields.setdefault(key.strip(), []).append(value.strip())
    if kind == "fragment":
        if name or set(fields) != {"why"}:
            raise DirectiveError(f"{where}: a fragment takes only a reason: `example: fragment; why: ...`")
        return Example(block.page, block.directive_line, kind, why=fields["why"][0], code=block.code)
    if not re.fullmatch(r"\w+", name):
        raise DirectiveError(f"{where}: a {kind} example needs a name of letters, digits and _, got {name!r}")
    run = shlex.split(" ".join(fields.get("run", [])))
    runner = "python" if kind == "script" else "pytest"
    if run[:1] != [runner]:
        raise DirectiveError(f"{where}: a {kind} example runs with `run: {runner}`")
    expect: dict[str, int] = {}
    for item in re.split(r"[,\s]+", " ".join(fields.get("expect", []))):
        noun, sep, count = item.partition("=")
        if not (sep and count.isdigit() and noun in (*OUTCOMES, "exit")):
            raise DirectiveError(f"{where}: expect takes NAME=N with NAME one of {', '.join(OUTCOMES)}, exit")
        expect[noun] = int(count)
    if kind == "script" and set(expect) != {"exit"}:
        raise DirectiveError(f"{where}: a script example expects its exit status (`expect: exit=0`)")
    output = tuple(fields.get("output", []))
    if kind == "output":  # the block's lines are the output, as printed
        output = tuple(line.rstrip() for line in block.code.splitlines() if line.strip())
    return Example(block.page, block.directive_line, kind, name, tuple(run[1:]), expect, output, code=block.code)


def read(page: Path, root: Path = ROOT) -> tuple[list[Example], list[Block]]:
    """A page's examples (fragments included), and its python blocks without a directive."""
    rel = str(page.relative_to(root)) if page.is_relative_to(root) else page.name
    found = blocks(page.read_text(encoding="utf-8"), rel)
    examples = [parse(b) for b in found if b.directive is not None]
    bare = [b for b in found if b.directive is None and b.language in PYTHON]
    return examples, bare


def runnable(pages: list[Path] = PAGES) -> list[Example]:
    return [e for page in pages for e in read(page)[0] if e.kind != "fragment"]


@dataclass(frozen=True)
class Ran:
    exit: int
    stdout: str
    stderr: str


def run(example: Example, directory: Path, pytester: pytest.Pytester | None = None) -> Ran:
    """Write the example's block into `directory` and run it as its directive says: a script in a process of its own,
    pytest in a session of its own; with `pytester` (whose directory `directory` then is), that session runs in this
    process, as pytester runs one (the modules it imports are dropped after it), saving the start of a process."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / example.filename
    if example.kind != "output":  # an output's block is what the command prints, not a file it runs
        path.write_text(example.code, encoding="utf-8")
    if example.kind in ("test", "output"):
        (directory / "pytest.ini").write_text("[pytest]\n")  # a project of its own: no ini or conftest above it
        tests = [path.name] if example.kind == "test" else []
        arguments = ["-p", "no:cacheprovider", *example.run, *tests]
        if pytester is not None:
            assert pytester.path == directory, "an in-process session runs in pytester's directory"
            result = pytester.runpytest_inprocess(*arguments)
            return Ran(int(result.ret), result.stdout.str(), result.stderr.str())
        command = [sys.executable, "-m", "pytest", *arguments]
    else:
        command = [sys.executable, path.name, *example.run]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE_"))}  # an outer run's
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])  # this checkout
    done = subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    return Ran(done.returncode, done.stdout, done.stderr)


def problems(example: Example, ran: Ran) -> list[str]:
    """How the run differs from what the page says it gives; empty when it gives exactly that."""
    out: list[str] = []
    if "exit" in example.expect and ran.exit != example.expect["exit"]:
        out.append(f"exit status {ran.exit}, the page says {example.expect['exit']}")
    if example.kind in ("test", "output"):
        try:
            counts = pytest.RunResult.parse_summary_nouns(ran.stdout.splitlines())
        except ValueError:
            counts = None
            out.append("pytest printed no summary line")
        if counts is not None:
            got = {noun: counts.get(noun, 0) for noun in OUTCOMES}
            said = {noun: example.expect.get(noun, 0) for noun in OUTCOMES}
            if got != said:
                shown = ", ".join(f"{k}={v}" for k, v in got.items() if v or said[k])
                out.append(f"outcomes {shown}, the page says {', '.join(f'{k}={v}' for k, v in said.items() if v)}")
    lines = [line.rstrip() for line in ran.stdout.splitlines()]
    at = 0
    match = (lambda line, text: line == text) if example.kind == "output" else fnmatch.fnmatch
    for pattern in example.output:
        hit = next((i for i in range(at, len(lines)) if match(lines[i], pattern)), None)
        if hit is None:
            out.append(f"no line of the output (after the last matched) matches {pattern!r}")
            break
        at = hit + 1
    return out
