"""Contributor mode on a diffusers checkout that is not the release the baseline was recorded on.

A copy of the installed diffusers goes first on PYTHONPATH, edited the way a branch edits it, and the built-in suite
runs against it from outside this repository (`--nosync-suite`: the shipped baseline judges the run):
- lines added at the top of every file a known issue lives in: green, every entry still matches (and says it moved);
- the Flux2 Klein pipeline no longer reads `transformer.dtype` in its loop: the walk's entry is reported as fixed;
- a new sync beside UniPC's known host copy: it fails, naming its line, while the known one stays known.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests import shared_session
from tests.releases import diffusers_before
from tests.shared_session import SharedSession

diffusers = pytest.importorskip("diffusers")
if diffusers_before("0.38"):  # the code these tests edit, and the known issues they keep known, came with 0.38
    pytest.skip(
        f"diffusers {diffusers.__version__} predates UniPC's host sigma copies and the other known issues of the "
        "shipped baseline (0.38 and later): the suite fails there on the release's own defects (docs/validation.md)",
        allow_module_level=True,
    )
PACKAGE = Path(__file__).parents[2] / "pytest_nosync"

SHIFTED_FILES = (
    "schedulers/scheduling_unipc_multistep.py",
    "models/transformers/transformer_qwenimage.py",
    "models/modeling_utils.py",
    "pipelines/wan/pipeline_wan.py",
    "pipelines/flux2/pipeline_flux2_klein.py",
)
HEADER = "# a contributor's branch\n# adds a few lines\n# at the top of the file\n"
UNIPC = "schedulers/scheduling_unipc_multistep.py"
UNIPC_COPY = "sigma_t, sigma_s0 = self.sigmas[self.step_index + 1].to(device), self.sigmas[self.step_index].to(device)"


def _copy(root: Path) -> Path:
    source = Path(diffusers.__file__).parent
    # with its bytecode (copied with the sources' times, so it stays valid): a process importing the copy compiles only
    # what an edit changed
    shutil.copytree(source, root / "diffusers")
    return root / "diffusers"


def _edit(path: Path, old: str, new: str) -> int:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))
    return text[: text.index(old)].count("\n") + 1  # the line the edit starts at


SUITE = ("-m", "gpu", "--nosync", "--nosync-suite", "-p", "no:cacheprovider", "-p", "no:randomly")


def _suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, site: Path, *args: str) -> pytest.RunResult:
    # first on the path, before whatever PYTHONPATH the run was given (where pytest-nosync itself may be installed)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p))
    return pytester.runpytest_subprocess(*SUITE, *args)


@pytest.mark.slow
def test_lines_added_at_the_top_keep_every_known_issue_known(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    package = _copy(tmp_path / "site")
    for name in SHIFTED_FILES:
        path = package / name
        path.write_text(HEADER + path.read_text())
    result = _suite(
        pytester, monkeypatch, tmp_path / "site",
        "--nosync-targets=wan,qwenimage_edit,flux2_klein",
        "-k", "test_syncs or test_host_overhead or test_modulate_index or order2-bh2-flow-x0on-correctoron",
    )  # fmt: skip
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, out[-4000:]
    assert "(shipped with pytest-nosync)" in out
    assert "STALE" not in out and "FIXED" not in out
    result.stdout.fnmatch_lines(["MOVED baseline #* now at line 889 (recorded at 886)"])  # the copy ran: 3 lines down


@pytest.fixture(scope="module")
def fixed_and_new(tmp_path_factory: pytest.TempPathFactory, shared_cache_home: Path) -> tuple[SharedSession, int]:
    """One branch with two edits, one session for both tests below (its interpreters' start is what they cost): the
    Flux2 Klein pipeline no longer walks the module tree in its loop, and UniPC gained a sync beside its known copy.
    The line of that copy, returned beside the session, is where the edit began. (That a fixed entry alone fails a
    run, Wan's new sync aside, is test_baseline_workflow.py's.)"""
    line = Path(diffusers.__file__).parent.joinpath(UNIPC).read_text().split(UNIPC_COPY)[0].count("\n") + 1
    session = shared_session.once(tmp_path_factory, "fixed-and-new", _fixed_and_new, shared_cache_home)
    assert session.result.ret == pytest.ExitCode.TESTS_FAILED, session.result.stdout.str()[-4000:]
    return session, line


def _fixed_and_new(root: Path) -> SharedSession:
    package = _copy(root / "site")
    _edit(
        package / "pipelines/flux2/pipeline_flux2_klein.py",
        "latent_model_input = latents.to(self.transformer.dtype)",
        "latent_model_input = latents.to(latents.dtype)",  # no module-tree walk in the loop any more
    )
    _edit(package / UNIPC, UNIPC_COPY, UNIPC_COPY + "\n        scale = float(sigma_t)")
    return shared_session.run(
        root, *SUITE, "--nosync-targets=wan,flux2_klein", "-k",
        "test_host_overhead and flux2_klein or test_syncs and wan", first_on_path=[root / "site"],
    )  # fmt: skip


@pytest.mark.slow
def test_a_fixed_issue_names_the_entry_to_delete(fixed_and_new: tuple[SharedSession, int]) -> None:
    session, _ = fixed_and_new
    assert session.outcomes("test_host_overhead[flux2_klein]") == {"passed": 1}
    session.result.stdout.fnmatch_lines(
        ["FIXED baseline #* host_overhead at diffusers/models/modeling_utils.py:* in get_parameter_dtype*: its code is "
         "still at line * but no longer reported: remove it"]
    )  # fmt: skip


@pytest.mark.slow
def test_a_new_sync_beside_a_known_one_still_fails(fixed_and_new: tuple[SharedSession, int]) -> None:
    session, line = fixed_and_new
    assert session.outcomes("test_syncs[wan]") == {"failed": 1}
    session.result.stdout.fnmatch_lines(
        [
            " failing:",
            f"  dtoh_sync     *diffusers/schedulers/scheduling_unipc_multistep.py:{line + 1}  — step 0 *",
            "      float(sigma_t)",
            " known issues (baseline):",
            f"  htod_sync     *diffusers/schedulers/scheduling_unipc_multistep.py:{line}  — step 0 *",
        ]
    )


@pytest.mark.slow
def test_the_checkout_runs_when_pytest_nosync_is_installed_beside_a_released_diffusers(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """pytest-nosync and a released diffusers in one directory (site-packages, `pip install --target`), the branch's
    diffusers first on PYTHONPATH. Collected by path, the suite put that directory first on sys.path: the release ran,
    the branch's new sync went unseen, and the run was green (seen on the device, where both are installed so)."""
    installed = tmp_path / "installed"
    _copy(installed)
    shutil.copytree(PACKAGE, installed / "pytest_nosync", ignore=shutil.ignore_patterns("__pycache__"))
    path = _copy(tmp_path / "branch") / "schedulers/scheduling_unipc_multistep.py"
    line = _edit(path, UNIPC_COPY, UNIPC_COPY + "\n        scale = float(sigma_t)")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(installed), os.environ.get("PYTHONPATH", "")]))
    result = _suite(pytester, monkeypatch, tmp_path / "branch", "--nosync-targets=wan", "-k", "test_syncs")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"nosync: backend *, diffusers * ({tmp_path / 'branch' / 'diffusers'})"])
    result.stdout.fnmatch_lines([f"  dtoh_sync     *{path}:{line + 1}  — step 0 *"])
