"""The census beyond one machine (plugin.census_shard, census.shards, census.merge): a small fake checkout of tester
modules in family folders, censused whole and in 3 shards by the durations the whole run wrote; the shards' reports
merged are the whole run's report, and what is not every shard of one census is refused with one sentence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_nosync import cli
from pytest_nosync.census import shards
from pytest_nosync.census.untested import module_families

TESTER = """
import unittest

import torch

from tests.twins.loop_pipeline import Denoiser, {pipeline}, Scheduler


class {name}(unittest.TestCase):
    pipeline_class = {pipeline}

    def get_dummy_components(self):
        torch.manual_seed(0)
        return {{"{denoiser}": Denoiser(), "scheduler": Scheduler()}}

    def get_dummy_inputs(self, device, seed=0):
        return {{"latents": torch.randn(2, 8), "num_inference_steps": 2, "read_early": {read}}}
"""

# family folder → its modules' tester classes: six modules, one of them of two classes
CHECKOUT = {
    "tests/pipelines/flux/test_flux.py": ["FluxPipelineFastTests"],
    "tests/pipelines/flux/test_flux_img2img.py": ["FluxImg2ImgPipelineFastTests", "FluxInpaintPipelineFastTests"],
    "tests/pipelines/wan/test_wan.py": ["WanPipelineFastTests"],
    "tests/pipelines/wan/test_wan_vace.py": ["WanVACEPipelineFastTests"],
    "tests/pipelines/sana/test_sana.py": ["SanaPipelineFastTests"],
    "tests/pipelines/ltx/test_ltx.py": ["LTXPipelineFastTests"],
}
RUN = ("tests", "-m", "gpu", "--nosync", "--nosync-checks=syncs,alloc_growth", "-p", "no:cacheprovider")


def _checkout(pytester: pytest.Pytester, reading: str = "") -> None:
    """The fake checkout; the tester class `reading` reads a value of the device in its steps (a sync)."""
    for module, classes in CHECKOUT.items():
        path = pytester.path / module
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(TESTER.format(name=name, pipeline=("NetPipeline" if i else "LoopPipeline"),
                                                denoiser=("net" if i else "transformer"), read=name == reading)
                                  for i, name in enumerate(classes)))  # fmt: skip
    pytester.makeini("[pytest]\nmarkers =\n    gpu\n")


def _comparable(doc: dict[str, Any]) -> dict[str, Any]:
    """A report without what differs between two runs of the same checks: when, how long, and which shard."""
    tests = [{**t, "metrics": {k: v for k, v in t["metrics"].items() if not k.endswith(("_s", "_ms", "_ns"))}}
             for t in doc["tests"]]  # fmt: skip
    return {"summary": doc["summary"], "census": doc["census"], "baseline_reviews": doc["baseline_reviews"],
            "targets": sorted(doc["seconds_per_target"]), "tests": tests}  # fmt: skip


def _merge(*args: str) -> tuple[int, str]:
    try:
        return cli.main(["census", "merge", *args]), ""
    except SystemExit as exc:
        return int(exc.code or 0), ""


def test_three_shards_merged_are_the_unsharded_census(pytester: pytest.Pytester, capsys: pytest.CaptureFixture) -> None:
    _checkout(pytester)
    whole = pytester.runpytest(*RUN, "--nosync-report=whole.json", "--nosync-durations=durations.json")
    whole.assert_outcomes(passed=14)
    durations = json.loads((pytester.path / "durations.json").read_text())
    assert len(durations) == 14 and all(seconds > 0 for seconds in durations.values())  # pytest-split's format
    # a second each, for shards this test can name: 14 s, 4.7 s a shard; flux (6 s) is split by module, wan (4 s) not
    (pytester.path / "durations.json").write_text(json.dumps(dict.fromkeys(durations, 1.0)))
    planned = [{"flux/test_flux_img2img.py", "sana/test_sana.py"}, {"wan/test_wan.py", "wan/test_wan_vace.py"},
               {"flux/test_flux.py", "ltx/test_ltx.py"}]  # fmt: skip

    ran: list[set[str]] = []
    for k in (1, 2, 3):
        result = pytester.runpytest(*RUN, f"--nosync-shard={k}/3", "--nosync-durations=durations.json",
                                    f"--nosync-report=shard{k}.json")  # fmt: skip
        assert result.ret == 0, result.stdout.str()
        result.stdout.fnmatch_lines([f"nosync: shard {k}/3: * test module(s) of * family folder(s)*"])
        ran.append({t["test_id"] for t in json.loads((pytester.path / f"shard{k}.json").read_text())["tests"]})
    assert sum(len(r) for r in ran) == 14 and len(set.union(*ran)) == 14  # each check in one shard
    assert [{t.split("::")[0].removeprefix("tests/pipelines/") for t in r} for r in ran] == planned

    paths = [str(pytester.path / f"shard{k}.json") for k in (3, 1, 2)]  # in any order
    capsys.readouterr()
    assert cli.main(["census", "merge", *paths, "--out", str(pytester.path / "census.json")]) == 0
    assert capsys.readouterr().out.startswith("census merge: 3 shards, 14 test reports, 7 tester classes → ")
    merged = json.loads((pytester.path / "census.json").read_text())
    unsharded = json.loads((pytester.path / "whole.json").read_text())
    assert _comparable(merged) == _comparable(unsharded)
    assert list(merged["census"]["outcomes"]) == list(unsharded["census"]["outcomes"])  # in the same order
    assert "shard" not in merged
    # the tables of the two are the same page
    cli.main(["census", str(pytester.path / "census.json")])
    merged_table = capsys.readouterr().out
    cli.main(["census", str(pytester.path / "whole.json")])
    assert capsys.readouterr().out == merged_table

    # a missing shard, a shard twice, a report of no shard, a shard of another plan: one sentence, exit 4, no output
    out = str(pytester.path / "partial.json")
    refused = {
        "missing": (paths[:2], "shard(s) 2 of 3 missing: a census merges every shard's report"),
        "twice": ([paths[0], paths[0], paths[1]], "are both shard 3/3"),
        "unsharded": ([*paths, str(pytester.path / "whole.json")], "whole.json is not a shard's report"),
    }
    for given, said in refused.values():
        with pytest.raises(SystemExit) as exited:
            cli.main(["census", "merge", *given, "--out", out])
        assert exited.value.code == 4
        err = capsys.readouterr().err
        assert said in err and err.count("\n") == 1
    assert not Path(out).exists()


def test_the_shards_baseline_writes_merge_into_the_unsharded_runs(pytester: pytest.Pytester) -> None:
    """Each shard keeps the earlier baseline's entries of classes it did not run: an entry another shard ran and
    matched nothing with (a class fixed since) is dropped from the merged baseline, as the unsharded run drops it."""
    _checkout(pytester, reading="SanaPipelineFastTests")
    run = (*RUN[:4], "--nosync-checks=syncs", "-p", "no:cacheprovider")
    pytester.runpytest(*run, "--nosync-baseline-write=recorded.json", "--nosync-report=first.json").assert_outcomes(
        passed=7
    )  # the sync recorded, not failed
    (sana,) = json.loads((pytester.path / "recorded.json").read_text())["entries"]
    fixed = {**sana, "target": "test_wan::WanPipelineFastTests"}  # an entry of a class that no longer syncs
    earlier = {**json.loads((pytester.path / "recorded.json").read_text()), "entries": [sana, fixed]}
    (pytester.path / "earlier.json").write_text(json.dumps(earlier))
    tests = [t["test_id"] for t in json.loads((pytester.path / "first.json").read_text())["tests"]]
    (pytester.path / "durations.json").write_text(json.dumps(dict.fromkeys(tests, 1.0)))

    judged = (*run, "--nosync-baseline=earlier.json", "--nosync-durations=durations.json")
    pytester.runpytest(*judged, "--nosync-baseline-write=whole.json").assert_outcomes(passed=7)
    for k in (1, 2, 3):
        pytester.runpytest(*judged, f"--nosync-shard={k}/3", f"--nosync-baseline-write=b{k}.json",
                           f"--nosync-report=s{k}.json")  # fmt: skip
    writes = [json.loads((pytester.path / f"b{k}.json").read_text())["entries"] for k in (1, 2, 3)]
    assert sum(fixed in entries for entries in writes) == 2  # kept by the two shards that did not run it

    reports = [str(pytester.path / f"s{k}.json") for k in (1, 2, 3)]
    baselines = [str(pytester.path / f"b{k}.json") for k in (1, 2, 3)]
    out = str(pytester.path / "census.json")
    assert cli.main(["census", "merge", *reports, "--out", out, "--baselines", *baselines,
                     "--baseline-out", str(pytester.path / "merged.json")]) == 0  # fmt: skip
    merged, whole = (json.loads((pytester.path / f"{name}.json").read_text()) for name in ("merged", "whole"))
    assert merged == whole and [e["target"] for e in merged["entries"]] == ["test_sana::SanaPipelineFastTests"]


def test_a_shard_of_another_selection_or_version_or_a_class_in_two_shards_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from pytest_nosync import run_report

    shard = {"count": 2, "plan": "p", "checkout": "c", "plugin": "0.1.0",
             "selection": {"checks": ["syncs"], "scenarios": ["plain"]}}  # fmt: skip
    checked = {"a/test_a.py::ATests": {"syncs": {"verdict": "checked", "passed": True}}}
    changed = {
        "checks": ({"selection": {"checks": ["syncs", "graph_breaks"]}}, {}, "s2.json is a shard of another selection"),
        "plugin": ({"plugin": "0.2.0"}, {}, "s2.json is a shard of another pytest-nosync version than"),
        "checkout": ({"checkout": "d"}, {}, "s2.json is a shard of another checkout than"),
        "plan": ({"plan": "q"}, {}, "s2.json is a shard of another shard plan (other durations"),
        "a class twice": ({}, checked, "the tester class a/test_a.py::ATests is in two shards"),
    }
    for other, outcomes, said in changed.values():
        paths = []
        for index, extra in ((1, {}), (2, other)):
            path = tmp_path / f"s{index}.json"
            census = {"schema": "pytest-nosync-census/2", "outcomes": outcomes}
            doc = run_report.document(
                [], {"diffusers": "0.42.1"}, {"census": census, "shard": {**shard, **extra, "index": index}}
            )
            run_report.write(str(path), doc)
            paths.append(str(path))
        with pytest.raises(SystemExit) as exited:
            cli.main(["census", "merge", *paths, "--out", str(tmp_path / "out.json")])
        err = capsys.readouterr().err
        assert exited.value.code == 4 and said in err and err.count("\n") == 1
        assert not (tmp_path / "out.json").exists()
    # a shard of no tester class has no census in its report: merged as an empty part
    doc = run_report.document([], {"diffusers": "0.42.1"}, {"shard": {**shard, "index": 2}})
    run_report.write(paths[1], doc)
    run_report.write(
        paths[0],
        run_report.document(
            [],
            {"diffusers": "0.42.1"},
            {"census": {"schema": "pytest-nosync-census/2", "outcomes": checked}, "shard": {**shard, "index": 1}},
        ),
    )
    assert cli.main(["census", "merge", *paths, "--out", str(tmp_path / "out.json")]) == 0
    assert list(json.loads((tmp_path / "out.json").read_text())["census"]["outcomes"]) == list(checked)


def test_modules_named_on_the_command_line_are_each_checked_in_their_own_shard_only(pytester: pytest.Pytester) -> None:
    """pytest collects a module named as an argument without asking pytest_ignore_collect: every shard checked all of
    them. The census gives a module of another shard no checks."""
    _checkout(pytester)
    modules = sorted(CHECKOUT)
    ran: list[set[str]] = []
    for k in (1, 2):
        result = pytester.runpytest(*modules, *RUN[1:], f"--nosync-shard={k}/2", f"--nosync-report=shard{k}.json")
        assert result.ret == 0, result.stdout.str()
        ran.append({t["test_id"] for t in json.loads((pytester.path / f"shard{k}.json").read_text())["tests"]})
    assert ran[0] and ran[1] and not ran[0] & ran[1]
    assert len(ran[0] | ran[1]) == 14  # each check once: seven classes, two checks


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("--nosync-shard=4/3", "--nosync-shard: must be K/N with 1 <= K <= N, got '4/3'"),
        ("--nosync-shard=0/3", "--nosync-shard: must be K/N with 1 <= K <= N, got '0/3'"),
        ("--nosync-shard=half", "--nosync-shard: must be K/N (the K-th of N shards, e.g. 2/8), got 'half'"),
        ("--nosync-durations=notjson.json", "--nosync-durations: the durations file notjson.json is not JSON"),
        ("--nosync-durations=foreign.json", "names no tester class of the selected test modules"),
        # each an INTERNALERROR once: a float overflow, a list of N loads, another script's digits taken for numbers
        ("--nosync-durations=huge.json", "the durations file huge.json is not a JSON object of node id → seconds"),
        ("--nosync-shard=1/99999999999", "--nosync-shard: must be K/N with N at most 1000, got '1/99999999999'"),
        ("--nosync-shard=\u0661/\u0663", "--nosync-shard: must be K/N (the K-th of N shards, e.g. 2/8)"),
    ],
)
def test_bad_shards_and_durations_are_one_sentence_before_anything_runs(
    pytester: pytest.Pytester, option: str, said: str
) -> None:
    _checkout(pytester)
    (pytester.path / "notjson.json").write_text("{not json")
    (pytester.path / "foreign.json").write_text(json.dumps({"tests/models/test_unet.py::UNetTests::test_x": 3.0}))
    (pytester.path / "huge.json").write_text('{"tests/pipelines/a/test_a.py::A::nosync[syncs]": 1' + "0" * 400 + "}")
    shard = [] if option.startswith("--nosync-shard") else ["--nosync-shard=1/2"]
    result = pytester.runpytest(*RUN, option, *shard)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert said in result.stderr.str()
    assert "passed" not in result.stdout.str()


def test_packing_is_longest_first_keeps_families_and_gives_the_mean_to_the_unrecorded() -> None:
    modules = ["a/test_1.py", "a/test_2.py", "b/test_3.py", "c/test_4.py", "d/test_5.py"]
    durations = {"a/test_1.py::A::nosync[syncs]": 10.0, "a/test_2.py::B::nosync[syncs]": 10.0,
                 "b/test_3.py::C::nosync[syncs]": 6.0, "c/test_4.py::D::nosync[syncs]": 4.0}  # fmt: skip
    plan = shards.pack(modules, durations, 2)
    # the mean (7.5) for d/test_5.py; family a (20) is above a shard's share (37.5 / 2): its modules go one by one
    # longest first into the lightest (the lower index on a tie): a/test_1 | a/test_2, d → 1, b → 2, c → 2
    assert plan.shards == (("a/test_1.py", "d/test_5.py"), ("a/test_2.py", "b/test_3.py", "c/test_4.py"))
    assert plan.seconds == (17.5, 20.0) and plan.estimated == 1
    assert shards.pack(list(reversed(modules)), dict(reversed(durations.items())), 2) == plan  # whatever the order
    together = shards.pack(modules, durations, 1)
    assert together.shards == (tuple(modules),)
    smaller = {**durations, "a/test_1.py::A::nosync[syncs]": 1.0, "a/test_2.py::B::nosync[syncs]": 2.0}
    three = shards.pack(modules, smaller, 3)  # family a (3 s) within a share (16.25 s / 3): kept whole
    assert [s for s in three.shards if "a/test_1.py" in s] == [s for s in three.shards if "a/test_2.py" in s]


def test_a_runs_classes_cost_their_recorded_seconds_and_the_mean_where_none_is_recorded() -> None:
    durations = {"a/test_1.py::A::nosync[syncs]": 10.0, "a/test_1.py::A::nosync[graph_breaks]": 20.0,
                 "b/test_2.py::B::nosync[syncs]@b/test_2.py::B": 6.0,  # as xdist's loadgroup reports it
                 "b/test_2.py::B::Untested::nosync[syncs]": 2.0, "c/test_3.py::test_other": 99.0}  # fmt: skip
    costs = shards.class_seconds(["a/test_1.py::A", "b/test_2.py::B", "b/test_2.py::B::Untested", "d/test_4.py::D"],
                                 durations)  # fmt: skip
    assert costs == {"a/test_1.py::A": 30.0, "b/test_2.py::B": 6.0, "b/test_2.py::B::Untested": 2.0,
                     "d/test_4.py::D": 38.0 / 3}  # fmt: skip
    assert shards.class_seconds(["a/test_1.py::A"], {}) == {"a/test_1.py::A": 1.0}  # nothing recorded: all alike


def _as_an_xdist_worker(pytester: pytest.Pytester) -> None:
    """The runs collect as an xdist worker does: -n asked for, the workers not started (set once xdist has
    configured, and before the collection orders the items)."""
    pytester.makeconftest(
        """
        import pytest

        @pytest.hookimpl(trylast=True)
        def pytest_configure(config):
            config.option.numprocesses = 2
        """
    )


def _run_order(pytester: pytest.Pytester, *args: str) -> list[str]:
    """The tester classes a collection would run, in its order."""
    recorded = pytester.inline_run(*args, "--collect-only")
    assert recorded.ret == 0
    items = recorded.getcalls("pytest_collection_finish")[0].session.items  # as they will run
    return list(dict.fromkeys(item.nodeid.split("::")[1] for item in items))


def test_under_xdist_the_census_classes_are_taken_longest_first_by_the_recorded_durations(
    pytester: pytest.Pytester,
) -> None:
    """xdist's loadgroup hands out the tester classes in collection order: a long class collected last (a class no
    tester names comes after every tester) started at the end of a GPU census and ran alone for 40 s. With recorded
    durations, every worker orders its items by their class's seconds, longest first; without, as collected."""
    _checkout(pytester)
    # recorded for four classes; the other three count the mean, 9.5 s
    seconds = {"FluxPipelineFastTests": 1.0, "FluxImg2ImgPipelineFastTests": 2.0, "LTXPipelineFastTests": 30.0,
               "SanaPipelineFastTests": 5.0}  # fmt: skip
    durations = {f"{m}::{c}::nosync[syncs]": seconds[c] for m, cs in CHECKOUT.items() for c in cs if c in seconds}
    (pytester.path / "durations.json").write_text(json.dumps(durations))

    collected = _run_order(pytester, *RUN)
    assert _run_order(pytester, *RUN, "--nosync-durations=durations.json") == collected  # one process: none waits
    _as_an_xdist_worker(pytester)
    assert _run_order(pytester, *RUN) == collected  # no durations: as collected
    assert _run_order(pytester, *RUN, "--nosync-durations=durations.json") == [
        "LTXPipelineFastTests", "FluxInpaintPipelineFastTests", "WanPipelineFastTests", "WanVACEPipelineFastTests",
        "SanaPipelineFastTests", "FluxImg2ImgPipelineFastTests", "FluxPipelineFastTests"]  # fmt: skip


def test_without_a_durations_file_the_workers_take_the_last_runs_seconds_from_pytests_cache(
    pytester: pytest.Pytester,
) -> None:
    """A census run without --nosync-durations records its items' seconds in pytest's cache, and the next one's
    workers take the classes longest first by them; a shard's plan never reads the cache (each machine has its own)."""
    _checkout(pytester)
    cached = [arg for arg in RUN if arg not in ("-p", "no:cacheprovider")]
    pytester.runpytest(*cached).assert_outcomes(passed=14)
    path = pytester.path / ".pytest_cache" / "v" / "nosync" / "census_durations"
    recorded = json.loads(path.read_text())
    assert len(recorded) == 14 and all(seconds > 0 for seconds in recorded.values())  # every census item's
    path.write_text(json.dumps({nodeid: 30.0 if "::LTX" in nodeid else 1.0 for nodeid in recorded}))
    _as_an_xdist_worker(pytester)
    assert _run_order(pytester, *cached)[0] == "LTXPipelineFastTests"
    sharded = pytester.runpytest(*cached, "--nosync-shard=1/3", "--collect-only")
    sharded.stdout.fnmatch_lines(["*6 module(s) without one counted at the mean*"])  # the cache packed nothing
    path.write_text(json.dumps({"tests/pipelines/ltx/test_ltx.py::LTXPipelineFastTests::nosync[syncs]": "long"}))
    assert _run_order(pytester, *cached)[0] == "FluxPipelineFastTests"  # a cache edited by hand orders nothing
    path.write_text(json.dumps(["not", "seconds"]))
    pytester.runpytest(*cached, "-k", "LTX").assert_outcomes(passed=2)  # and a run writes over it
    assert len(json.loads(path.read_text())) == 2


def test_folders_testing_one_diffusers_family_are_packed_together() -> None:
    """Bug twin: diffusers' Bria Fibo family is tested from two folders (bria_fibo, bria_fibo_edit); packed apart, each
    shard took the other folder's class for one no tester names and checked it through a sibling, and the merged census
    had 20 rows an unsharded run does not (an H200, 2 shards of diffusers main)."""
    modules = ["a/test_1.py", "b/test_2.py", "c/test_3.py", "d/test_4.py", "e/test_5.py"]
    seconds = {"a": 5.0, "b": 10.0, "c": 5.0, "d": 10.0, "e": 5.0}
    durations = {f"{m}::T::nosync[syncs]": seconds[m[0]] for m in modules}
    kin = {"a/test_1.py": {"fibo"}, "c/test_3.py": {"fibo", "other"}, "e/test_5.py": {"other"}}
    apart = shards.pack(modules, durations, 2)
    assert apart.shards == (("a/test_1.py", "b/test_2.py", "e/test_5.py"), ("c/test_3.py", "d/test_4.py"))
    together = shards.pack(modules, durations, 2, kin)  # a, c and e share a family, transitively
    assert together.shards == (("a/test_1.py", "c/test_3.py", "e/test_5.py"), ("b/test_2.py", "d/test_4.py"))
    three = shards.pack(modules, durations, 3, kin)  # 15 s, above a share (35 / 3), and still never split
    assert ("a/test_1.py", "c/test_3.py", "e/test_5.py") in three.shards, three.shards


def test_a_familys_classic_and_modular_folders_are_kin_where_a_modular_class_no_config_names_is_exported(
    tmp_path: Path,
) -> None:
    """Wan 2.2's ModularPipeline classes, which no config names, are driven through the family's classic testers
    (census.modular_untested): the classic and the modular folders are one family for packing."""
    classic, modular = "tests/pipelines/wan/test_wan.py", "tests/modular_pipelines/wan/test_modular_pipeline_wan.py"
    for module, named in ((classic, "WanPipeline"), (modular, "WanModularPipeline")):
        (tmp_path / module).parent.mkdir(parents=True)
        (tmp_path / module).write_text(f"class TestIt:\n    pipeline_class = {named}\n")
    kin = module_families(tmp_path, [classic, modular])
    assert kin[classic] == kin[modular] == {"wan"}
    durations = {f"{m}::T::nosync[syncs]": 10.0 for m in (classic, modular)}
    assert shards.pack([classic, modular], durations, 2, kin).shards == ((modular, classic), ())


def test_a_class_checked_through_a_sibling_in_one_shard_and_checked_in_another_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from pytest_nosync import ids, run_report
    from pytest_nosync.findings import Report

    shard = {"count": 2, "plan": "p", "checkout": "c", "plugin": "0.1.0",
             "selection": {"checks": ["syncs"], "scenarios": ["plain"]}}  # fmt: skip
    through_sibling = ids.untested_tester("a/test_a.py::ATests", "EditPipeline")
    parts = {  # shard → its testers and their pipeline classes
        1: {"a/test_a.py::ATests": "APipeline", through_sibling: "EditPipeline"},
        2: {"b/test_b.py::EditTests": "EditPipeline"},  # EditPipeline's own tester
    }
    paths = []
    for index, testers in parts.items():
        reports = [
            Report(test_id=f"{t}::nosync[syncs]", check="syncs", passed=True, metrics={"pipeline": p})
            for t, p in testers.items()
        ]
        outcomes = {t: {"syncs": {"verdict": "checked", "passed": True}} for t in testers}
        census = {"schema": "pytest-nosync-census/2", "outcomes": outcomes}
        extra = {"census": census, "shard": {**shard, "index": index}}
        path = tmp_path / f"s{index}.json"
        run_report.write(str(path), run_report.document(reports, {"diffusers": "0.42.1"}, extra))
        paths.append(str(path))
    with pytest.raises(SystemExit) as exited:
        cli.main(["census", "merge", *paths, "--out", str(tmp_path / "out.json")])
    err = capsys.readouterr().err
    assert exited.value.code == 4 and err.count("\n") == 1, err
    assert "the pipeline class EditPipeline is checked through a sibling in" in err and "s2.json" in err, err
    assert not (tmp_path / "out.json").exists()
