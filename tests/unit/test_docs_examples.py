"""Every code example of the README and docs runs as written and gives the verdict its page says: each in a run of
its own (a script in a process of its own, pytest in a session of this process; emulated on the CPU, on the GPU where
one is visible), judged by its directive (tests/unit/docs_examples.py).
A python block without a directive fails, so an example cannot be added without being run or said not to run. The
runner's own twins: a wrong expectation on a tiny page is reported, the right one is not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.unit.docs_examples import PAGES, DirectiveError, Example, blocks, parse, problems, read, run, runnable
from tests.unit.docs_examples import Ran as _Ran


@pytest.mark.parametrize("example", runnable(), ids=lambda example: example.id)
def test_the_example_gives_what_its_page_says(
    example: Example, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [k for k in os.environ if k.startswith(("PYTEST_", "COV_CORE_")) and k != "PYTEST_DEBUG_TEMPROOT"]:
        monkeypatch.delenv(name)  # an outer run's (xdist's worker id): the example is a run of its own
    ran = run(example, pytester.path, pytester)
    found = problems(example, ran)
    assert not found, f"{example.id} (line {example.line}): {found}\n{ran.stdout[-4000:]}\n{ran.stderr[-2000:]}"


def test_every_python_block_is_run_or_said_not_to_run() -> None:
    bare = [f"{block.page}:{block.line}" for page in PAGES for block in read(page)[1]]
    assert not bare, f"python blocks without an `<!-- example: ... -->` directive above them: {bare}"


def test_example_names_are_unique() -> None:
    names = [e.name for e in runnable()]
    assert len(names) == len(set(names)), names


# ---- the runner's twins ---------------------------------------------------------------------------------------------
PASSING_TEST = "def test_one():\n    print('one ran')\n"
PAGE = f"""# A page

<!-- example: test right; run: pytest -s; expect: passed=1; output: *one ran* -->
```python
{PASSING_TEST}```

<!-- example: test wrong; run: pytest -s; expect: failed=1; output: *two ran* -->
```python
{PASSING_TEST}```

<!-- example: script exits; run: python; expect: exit=0; output: done -->
```python
print("done")
raise SystemExit(3)
```

<!-- example: fragment; why: a line of a table -->
```python
(_check("x"),)
```

```python
print("no directive")
```

```bash
echo shell blocks need none
```
"""


@pytest.fixture
def page(tmp_path: Path) -> Path:
    path = tmp_path / "page.md"
    path.write_text(PAGE, encoding="utf-8")
    return path


def test_the_runner_reports_a_wrong_expectation_and_passes_a_right_one(page: Path, tmp_path: Path) -> None:
    examples, bare = read(page, root=tmp_path)
    by_name = {e.name or e.kind: e for e in examples}
    assert set(by_name) == {"right", "wrong", "exits", "fragment"}
    fence = PAGE.splitlines().index('print("no directive")')  # its 1-based line, the one above it
    assert [block.line for block in bare] == [fence]  # the bash block needs no directive
    assert problems(by_name["right"], run(by_name["right"], tmp_path / "right")) == []
    assert problems(by_name["wrong"], run(by_name["wrong"], tmp_path / "wrong")) == [
        "outcomes passed=1, failed=0, the page says failed=1",
        "no line of the output (after the last matched) matches '*two ran*'",
    ]
    assert problems(by_name["exits"], run(by_name["exits"], tmp_path / "exits")) == ["exit status 3, the page says 0"]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("<!-- example: test x; run: pytest -->\n\nprose\n", "a directive with no code block below it"),
        ("<!-- example: demo x; run: pytest -->\n```python\n```\n", "the example's kind is one of"),
        ("<!-- example: test x; run: python -->\n```python\n```\n", "a test example runs with `run: pytest`"),
        ("<!-- example: test x; run: pytest; expect: pass=1 -->\n```python\n```\n", "expect takes NAME=N"),
        ("<!-- example: fragment -->\n```python\n```\n", "a fragment takes only a reason"),
        ("<!-- example: test x; run: pytest -->\n```bash\n```\n", "a directive stands above a python block"),
    ],
)
def test_a_directive_that_cannot_be_run_says_why(text: str, says: str) -> None:
    with pytest.raises(DirectiveError, match=f"^page.md:1: {says}"):
        for block in blocks(text, "page.md"):
            parse(block)


def test_an_output_block_is_matched_line_by_line_in_order() -> None:
    """An `output` example's block is what its command prints: every line, as written, in order (lines between are
    allowed); one changed count or place is a problem."""
    page = (
        "<!-- example: output shown; run: pytest -m gpu; expect: failed=1 -->\n"
        "```text\nnosync syncs: 2 finding(s)\n  htod_sync     a.py:3  — step 0 ×1\n```\n"
    )
    (block,) = blocks(page, "page.md")
    example = parse(block)
    assert example.kind == "output" and example.output == (
        "nosync syncs: 2 finding(s)",
        "  htod_sync     a.py:3  — step 0 ×1",
    )
    printed = "x\nnosync syncs: 2 finding(s)\n via\n  htod_sync     a.py:3  — step 0 ×1  \n=== 1 failed in 0.10s ===\n"
    assert problems(example, _Ran(1, printed, "")) == []
    changed = printed.replace("a.py:3", "a.py:4")
    assert problems(example, _Ran(1, changed, "")) == [
        "no line of the output (after the last matched) matches '  htod_sync     a.py:3  — step 0 ×1'"
    ]
