"""The README stays a page a newcomer reads in five minutes, and every page it and the docs link to exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_the_readme_is_short() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8")) <= 8000


def test_every_linked_page_exists() -> None:
    missing = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#:]+\.md)\)", page.read_text(encoding="utf-8")):
            if not (page.parent / target).exists():
                missing.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not missing, missing


def _commands(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("python -m pytest")]


def test_ci_runs_the_readmes_test_command_then_the_slow_tests_it_leaves_out() -> None:
    """The README's second command is the own tests without the slow ones; .ci/run runs it, then `-m slow`: no test
    is left out of CI."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    ran = _commands(ci)
    assert "python -m pytest -n auto" in _commands(readme)
    assert ran == ["python -m pytest -n auto", "python -m pytest -n auto -m slow"], ran
    ini = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'addopts = ["-m", "not slow"]' in ini and 'markers = ["slow:' in ini
