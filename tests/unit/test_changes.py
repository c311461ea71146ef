"""Changed lines from real git repositories, and which recorded code they touch (bug twin: a change inside a function
that ran selects it; clean twin: a change inside one that did not, selects nothing)."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_nosync.census.changes import WHOLE_FILE, ChangesError, changed_lines, merge_base, touched
from pytest_nosync.census.executed_code import ExecutedCode, record_executed

WORK = """\
LIMIT = 3


def helper(x):
    return x + LIMIT


def entry(x):
    y = helper(x)
    return y * 2


def never_called():
    return 0
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with pkg/work.py on main, checked out on a branch `feature` forked from it."""
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    (repo / "pkg" / "work.py").write_text(WORK)
    (repo / "pkg" / "other.py").write_text("def other():\n    return 1\n")
    commit(repo, "base")
    git(repo, "switch", "-q", "-c", "feature")
    return repo


@pytest.fixture
def record(repo: Path, request: pytest.FixtureRequest) -> ExecutedCode:
    """What entry() ran, recorded on the base version (the old side's line numbers)."""
    spec = importlib.util.spec_from_file_location(f"nosync_changes_{request.node.name}", repo / "pkg" / "work.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with record_executed(roots=[repo / "pkg"]) as executed:
        module.entry(1)
    return executed


def work(repo: Path) -> str:
    return str((repo / "pkg" / "work.py").resolve())


def test_a_change_inside_a_function_that_ran_selects_it(repo: Path, record: ExecutedCode) -> None:
    edit(repo / "pkg" / "work.py", "return x + LIMIT", "return x + LIMIT + 0")
    commit(repo, "bug twin")
    assert touched(record, changed_lines(repo)) == [(work(repo), "helper")]


def test_a_change_inside_a_function_that_did_not_run_selects_nothing(repo: Path, record: ExecutedCode) -> None:
    edit(repo / "pkg" / "work.py", "    return 0", "    return 1")
    commit(repo, "clean twin")
    assert changed_lines(repo) == {work(repo): ((14, 14),)}
    assert touched(record, changed_lines(repo)) == []


def test_a_module_level_change_of_a_recorded_file_counts(repo: Path, record: ExecutedCode) -> None:
    edit(repo / "pkg" / "work.py", "LIMIT = 3", "LIMIT = 4")
    assert touched(record, changed_lines(repo)) == [(work(repo), "<module>")]


def test_a_line_added_at_the_end_of_a_function_that_ran_selects_it(repo: Path, record: ExecutedCode) -> None:
    edit(repo / "pkg" / "work.py", "    return y * 2\n", "    return y * 2\n    print('unreachable')\n")
    assert (work(repo), "entry") in touched(record, changed_lines(repo))


def test_a_change_to_a_file_that_did_not_run_selects_nothing(repo: Path, record: ExecutedCode) -> None:
    edit(repo / "pkg" / "other.py", "return 1", "return 2")
    assert touched(record, changed_lines(repo)) == []


def test_worktree_edits_staged_or_not_are_included(repo: Path) -> None:
    edit(repo / "pkg" / "work.py", "    return 0", "    return 1")
    git(repo, "add", "pkg/work.py")
    edit(repo / "pkg" / "work.py", "return x + LIMIT", "return x - LIMIT")
    assert changed_lines(repo) == {work(repo): ((5, 5), (14, 14))}


def test_default_base_is_the_merge_base_not_mains_later_commits(repo: Path) -> None:
    fork = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "switch", "-q", "main")
    edit(repo / "pkg" / "other.py", "return 1", "return 3")
    commit(repo, "main moves on")
    git(repo, "switch", "-q", "feature")
    edit(repo / "pkg" / "work.py", "    return 0", "    return 1")
    assert merge_base(repo) == fork
    assert list(changed_lines(repo)) == [work(repo)]
    assert str((repo / "pkg" / "other.py").resolve()) in changed_lines(repo, "main")  # an explicit REF: as named


def test_master_is_the_fallback_base(repo: Path) -> None:
    git(repo, "branch", "-m", "main", "master")
    assert merge_base(repo) == git(repo, "rev-parse", "master").strip()


def test_untracked_added_deleted_and_renamed_files_are_wholly_changed(repo: Path) -> None:
    (repo / "pkg" / "gone.py").write_text("y = 2\n")
    commit(repo, "a file to delete")
    (repo / "pkg" / "gone.py").unlink()
    (repo / "pkg" / "new.py").write_text("x = 1\n")
    git(repo, "mv", "pkg/other.py", "pkg/renamed.py")
    top = repo.resolve() / "pkg"
    new_side = changed_lines(repo, "HEAD", side="new")
    assert new_side == {str(top / name): WHOLE_FILE for name in ("gone.py", "new.py", "renamed.py")}
    old_side = changed_lines(repo, "HEAD", side="old")  # a record of the old path selects
    assert old_side == {str(top / name): WHOLE_FILE for name in ("gone.py", "new.py", "other.py")}


def test_a_file_git_takes_for_binary_is_wholly_changed(repo: Path) -> None:
    """A NUL byte makes git diff a file as binary: no ---/+++ lines and no hunks, and the change was dropped."""
    (repo / "pkg" / "work.py").write_bytes(WORK.encode() + b"# \0\n")
    assert changed_lines(repo, side="new") == {work(repo): WHOLE_FILE}
    assert changed_lines(repo, side="old") == {work(repo): WHOLE_FILE}


def test_a_deletion_counts_on_both_sides_of_it(repo: Path) -> None:
    edit(repo / "pkg" / "work.py", "    y = helper(x)\n", "")
    assert changed_lines(repo, side="old") == {work(repo): ((9, 9),)}
    assert changed_lines(repo, side="new") == {work(repo): ((8, 9),)}  # between new lines 8 and 9: inside entry


def test_quoted_paths_are_read_back(repo: Path) -> None:
    odd = repo / "pkg" / "wé ird.py"
    odd.write_text("a = 1\n")
    commit(repo, "odd name")
    odd.write_text("a = 2\n")
    assert changed_lines(repo, "HEAD") == {str(odd.resolve()): ((1, 1),)}


def test_touched_works_on_a_record_read_back_from_json(repo: Path, record: ExecutedCode) -> None:
    data = record.to_json([repo / "pkg"])
    back = ExecutedCode.from_json(data, [repo.resolve() / "pkg"])
    edit(repo / "pkg" / "work.py", "    y = helper(x)", "    y = helper(x + 1)")
    assert touched(back, changed_lines(repo)) == [(work(repo), "entry")]


def test_errors_are_one_sentence(tmp_path: Path, repo: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ChangesError, match="not inside a git repository") as not_repo:
        changed_lines(tmp_path / "empty")
    with pytest.raises(ChangesError, match="'no-such-ref' is not a commit") as unknown:
        changed_lines(repo, "no-such-ref")
    git(repo, "branch", "-m", "main", "trunk")
    with pytest.raises(ChangesError, match="no main, master or origin/HEAD") as no_base:
        changed_lines(repo)
    for error in (not_repo, unknown, no_base):
        assert "\n" not in str(error.value)


def test_a_record_whose_file_changed_unseen_counts_every_change_there(repo: Path, request) -> None:
    # Without roots the functions of a file are read when asked; changed since it ran, they are unknown.
    spec = importlib.util.spec_from_file_location(f"nosync_unseen_{request.node.name}", repo / "pkg" / "work.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with record_executed() as executed:
        module.entry(1)
    edit(repo / "pkg" / "work.py", "    return 0", "    return 1  # now longer")
    assert executed.defs(work(repo)) is None
    assert touched(executed, changed_lines(repo)) == [(work(repo), "<module>")]


SHARED = "from .constants import LIMIT, Mixin\n"
CONSTANTS = """\
LIMIT = 3


def unused():
    return 0


class Mixin:
    scale = 2

    def never(self):
        return 1
"""
LAYERED = """\
from . import __version__
from .other_pipeline import OtherPipeline
from .shared import LIMIT, Mixin


class Pipe(Mixin):
    def __call__(self, x):
        return x * self.scale + LIMIT


def lazy():
    from .lazy_only import THING

    return THING
"""


OTHER_PIPELINE = """\
EXAMPLE = "an example"


class OtherPipeline:
    def __call__(self):
        return EXAMPLE
"""


@pytest.fixture
def layered(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Path, ExecutedCode]:
    """A package whose work.py reads a constant, and a class attribute of its base, from a module none of whose
    functions run (imported before the record began, through a package that re-exports them); the record of
    Pipe()(1)."""
    name = f"nosync_layered_{abs(hash(request.node.name))}"
    repo = tmp_path / "repo"
    package = repo / name
    (package / "shared").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    files = {"__init__.py": "__version__ = '1.0'\n", "shared/__init__.py": SHARED, "shared/constants.py": CONSTANTS}
    files |= {"work.py": LAYERED, "lazy_only.py": "THING = 1\n", "unrelated.py": "VALUE = 1\n"}
    files |= {"other_pipeline.py": OTHER_PIPELINE}
    for path, text in files.items():
        (package / path).write_text(text)
    commit(repo, "base")
    sys.path.insert(0, str(repo))
    try:
        module = importlib.import_module(f"{name}.work")
        with record_executed(roots=[package]) as executed:
            module.Pipe()(1)
    finally:
        sys.path.remove(str(repo))
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[loaded]
    return package, executed


def test_a_module_whose_names_the_recorded_code_imports_is_in_the_record_without_its_re_exporter(layered) -> None:
    package, record = layered
    constants = str((package / "shared" / "constants.py").resolve())
    # not shared/__init__ (it only re-exports), lazy_only (imported in a function that never ran) or unrelated
    assert record.imported == {constants}
    back = ExecutedCode.from_json(record.to_json([package]), [package])
    assert back.imported == {constants} and back.files() == record.files()


@pytest.mark.parametrize(
    ("old", "new"),
    [("LIMIT = 3", "LIMIT = 4"), ("    scale = 2", "    scale = 3")],  # a constant; a class attribute the call reads
)
def test_a_module_level_change_of_a_module_read_at_import_selects_the_code_that_imports_it(layered, old, new) -> None:
    """Bug twin: no function of constants.py ran, so its record was empty and this change selected nothing."""
    package, record = layered
    edit(package / "shared" / "constants.py", old, new)
    assert touched(record, changed_lines(package.parent)) == [(str((package / "shared" / "constants.py").resolve()),
                                                                "<module>")]  # fmt: skip


@pytest.mark.parametrize(("old", "new"), [("    return 0", "    return 5"), ("        return 1", "        return 6")])
def test_a_change_inside_a_function_of_a_module_read_at_import_selects_nothing(layered, old, new) -> None:
    package, record = layered
    edit(package / "shared" / "constants.py", old, new)
    assert touched(record, changed_lines(package.parent)) == []


def test_an_import_inside_a_function_that_never_ran_is_no_dependency(layered) -> None:
    package, record = layered
    edit(package / "lazy_only.py", "THING = 1", "THING = 2")
    edit(package / "unrelated.py", "VALUE = 1", "VALUE = 2")
    assert touched(record, changed_lines(package.parent)) == []


def test_an_imported_class_that_never_ran_and_a_packages_face_are_no_dependency(layered) -> None:
    """Over-selection guard: a test module imports many pipeline classes it never runs (their module-level lines are
    theirs when they run), and every module reads diffusers' version from its package `__init__`, which each new
    pipeline edits."""
    package, record = layered
    edit(package / "other_pipeline.py", 'EXAMPLE = "an example"', 'EXAMPLE = "another"')
    edit(package / "__init__.py", "'1.0'", "'1.1'")
    assert touched(record, changed_lines(package.parent)) == []


@pytest.fixture
def imported_inside(repo: Path, request: pytest.FixtureRequest) -> ExecutedCode:
    """What entry() ran, with work.py first imported inside the record: its module code ran there too."""
    (repo / "pkg" / "boxes.py").write_text(BOXES)
    commit(repo, "boxes")
    with record_executed(roots=[repo / "pkg"]) as executed:
        for stem in ("work", "boxes"):
            spec = importlib.util.spec_from_file_location(f"nosync_inside_{stem}_{request.node.name}",
                                                          repo / "pkg" / f"{stem}.py")  # fmt: skip
            assert spec and spec.loader
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            if stem == "work":
                module.entry(1)
    return executed


def head(repo: Path) -> str:
    """The commit the edits are read against (boxes.py, added on the branch, is otherwise wholly changed)."""
    return git(repo, "rev-parse", "HEAD").strip()


BOXES = """\
class Box:
    size = 2

    def grow(self):
        return self.size + 1
"""


def test_a_module_imported_inside_the_record_selects_by_its_functions_not_as_a_whole(repo, imported_inside) -> None:
    """Bug twin of over-selection: the module's own code ran in the record, and its span (the whole file) made a change
    inside a function that never ran, or a method of a class whose body ran, select the tester."""
    assert any(span.qualname == "<module>" for span in imported_inside.spans)
    assert any(span.qualname == "Box" for span in imported_inside.spans)  # the class body ran at import
    edit(repo / "pkg" / "work.py", "    return 0", "    return 1")  # never_called
    edit(repo / "pkg" / "boxes.py", "return self.size + 1", "return self.size + 2")  # grow, never called
    assert touched(imported_inside, changed_lines(repo, head(repo))) == []


def test_a_module_imported_inside_the_record_still_counts_its_module_level_lines(repo, imported_inside) -> None:
    edit(repo / "pkg" / "work.py", "LIMIT = 3", "LIMIT = 4")
    edit(repo / "pkg" / "boxes.py", "    size = 2", "    size = 3")  # a class attribute: module-level code
    boxes, work_file = str((repo / "pkg" / "boxes.py").resolve()), work(repo)
    expected = sorted([(boxes, "<module>"), (work_file, "<module>")])  # not the class body's span ("Box"): module code
    assert touched(imported_inside, changed_lines(repo, head(repo))) == expected
    edit(repo / "pkg" / "work.py", "    y = helper(x)", "    y = helper(x + 1)")
    assert (work_file, "entry") in touched(imported_inside, changed_lines(repo, head(repo)))
