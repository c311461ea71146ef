"""The census as data and Markdown (pytest_nosync.census, `python -m pytest_nosync census`): one row per tester class
from a run's report, a cell per check that shows a number only where the check reached its verdict, a census run in
parts, the coverage it adds up to, and the diff of two censuses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_nosync import ids, run_report
from pytest_nosync.census import outcomes, table
from pytest_nosync.census.diff import NothingInCommon, diff
from pytest_nosync.census.outcomes import CheckOutcome, Coverage, Verdict
from pytest_nosync.findings import Finding, Phase, Report, Status, not_checked_finding

UNIPC = "/ckpt/src/diffusers/schedulers/scheduling_unipc_multistep.py:886"
CHECKS = ("syncs", "graph_breaks", "alloc_growth", "host_overhead")


def _report(tester: str, column: str, *findings: Finding) -> Report:
    check, scenario = ids.parse_column(column)
    item = str(ids.CensusId(f"tests/pipelines/{tester}", check, scenario))
    test_id = ids.with_group(item, f"tests/pipelines/{tester}")  # as xdist's loadgroup says it
    return Report(list(findings), test_id=test_id, check=check, target=tester, scenario=scenario)


def _sync(step: int | None, where: str = UNIPC, status: Status = Status.FAIL, count: int = 2) -> Finding:
    phase = Phase.IN_STEP if step is not None else Phase.AFTER_STEPS
    return Finding("htod_sync", where, step=step, phase=phase, count=count, status=status)


WAN = "wan/test_wan.py::WanFastTests"
FLUX = "flux/test_flux.py::FluxFastTests"
GLM = "glm/test_glm.py::GlmFastTests"
SANA = "sana/test_sana_sprint.py::SanaSprintFastTests"


def _coverage(reports: list[Report], pipeline: str, **others: CheckOutcome) -> Coverage:
    coverage = Coverage()
    for r in reports:
        parsed = ids.parse(r.test_id)
        coverage.add(parsed.tester, parsed.column, outcomes.outcome_of(r, pipeline))
    for where, outcome in others.items():
        tester, column = where.split(":")
        coverage.add(f"tests/pipelines/{dict(sana=SANA, glm=GLM)[tester]}", column, outcome)
    return coverage


def _parts() -> tuple[list[Report], Coverage, list[Report], Coverage]:
    first = [
        _report(WAN, "syncs", _sync(0), _sync(1), _sync(1, status=Status.KNOWN), _sync(None)),
        _report(
            WAN, "graph_breaks", Finding("graph_break", "/x/diffusers/models/wan.py:10", step=0, status=Status.FAIL)
        ),
        _report(WAN, "alloc_growth"),
        _report(WAN, "host_overhead"),
    ]
    second = [_report(FLUX, check) for check in CHECKS]
    hub = outcomes.skipped("get_dummy_components() needs a hub repository this machine cannot get: x", "GlmPipeline")
    return (
        first,
        _coverage(first, "WanPipeline"),
        second,
        _coverage(second, "FluxPipeline", **{f"glm:{c}": hub for c in CHECKS}),
    )


def test_a_row_counts_a_steady_steps_syncs_known_included_and_names_their_places() -> None:
    first, coverage, _, _ = _parts()
    (row,) = table.rows(first, coverage)
    # step 1 had 2 + 2 (the known one counts: the census maps what the code does); after the steps does not count
    assert row.cells["syncs"].text() == "4: `diffusers/schedulers/scheduling_unipc_multistep.py:886`"
    assert row.cells["graph_breaks"].text() == "1: `diffusers/models/wan.py:10`"
    assert (row.cells["alloc_growth"].text(), row.cells["host_overhead"].text(), row.note) == ("0", "0", "")
    assert row.pipeline == "WanPipeline"


def test_a_row_says_the_inputs_its_steps_were_freed_by() -> None:
    """SanaSprint's checks run with intermediate_timesteps=None (census.testers.STEP_FREEING): its row says so."""
    freed = "intermediate_timesteps=None (without it, num_inference_steps=3 raised ValueError: ...)"
    reports = [_report(SANA, check) for check in CHECKS]
    for report in reports:
        report.metrics["steps_freed_by"] = freed
    (row,) = table.rows(reports, _coverage(reports, "SanaSprintPipeline"))
    assert row.note == f"its steps freed by {freed}"


def test_the_summary_counts_a_sync_under_a_scenario_where_the_census_has_no_plain_column() -> None:
    """A census of one scenario (`--nosync-scenarios=faster_cache`) said 0 classes with a sync while its cells showed
    them: it counted the plain `syncs` column alone."""
    reports = [_report(WAN, "syncs-faster_cache", _sync(0), _sync(1)), _report(FLUX, "syncs-faster_cache")]
    text = table.render(reports, _coverage(reports, "P"), {}, "T")
    assert "1 with a sync in their steady steps" in text
    assert text.count("| 2: `diffusers/schedulers/scheduling_unipc_multistep.py:886` |") == 1


def test_a_place_without_a_file_is_named_as_it_is() -> None:
    generated = [_report(WAN, "syncs", _sync(1, where="<eval_with_key>.21:18"))]
    (row,) = table.rows(generated, _coverage(generated, "WanPipeline"))
    assert row.cells["syncs"].text() == "2: `<eval_with_key>.21:18`"


def test_a_check_without_a_verdict_shows_why_and_no_number() -> None:
    """A zero is a claim: a check that could not run, was not checkable, or whose pipeline raised shows no number,
    whatever its report holds."""
    ran_one = not_checked_finding("the call ran 1 of the 2 denoising steps the check asked for").with_status(
        Status.FAIL
    )
    error = Finding("error", "/x/diffusers/pipelines/p.py:3", step=0, status=Status.FAIL, detail="ValueError: no")
    reports = [
        _report(SANA, "syncs", _sync(1), ran_one),  # a sync seen before the check said it could not judge
        _report(SANA, "graph_breaks", error),
    ]
    capped = outcomes.skipped(
        "SanaSprintPipeline runs 2 denoising step(s) a call whatever num_inference_steps asks (...), fewer than the "
        "check needs",
        "SanaSprintPipeline",
    )
    coverage = _coverage(reports, "SanaSprintPipeline", **{"sana:alloc_growth": capped})
    wan = [_report(WAN, check) for check in CHECKS]  # another class ran every check: SanaSprint's last did not run
    row = next(r for r in table.rows(reports + wan, outcomes.merge([coverage, _coverage(wan, "WanPipeline")]))
               if r.pipeline == "SanaSprintPipeline")  # fmt: skip
    assert row.cells["syncs"].text() == "not checked: ran 1 of 2 steps"
    assert row.cells["graph_breaks"].text() == "raised"
    assert row.cells["alloc_growth"].text() == "not checked: capped at 2 step(s)"
    assert row.cells["host_overhead"].text() == "not run"
    assert row.note == "raises: ValueError: no"
    assert coverage.count(Verdict.CHECKED) == 0 and coverage.fully_checked == 0 and len(coverage.all()) == 3


def test_a_rows_note_follows_the_columns_whatever_order_the_workers_finished_its_checks_in() -> None:
    """The reasons and the raise a row's note names come in the table's column order: two runs with the same verdicts
    render the same note, however xdist's workers interleaved a class's checks."""
    error = Finding("error", "/x/diffusers/pipelines/p.py:3", step=0, status=Status.FAIL, detail="ValueError: first")
    later = Finding("error", "/x/diffusers/pipelines/p.py:9", step=0, status=Status.FAIL, detail="KeyError: later")
    reports = [_report(SANA, "syncs", error), _report(SANA, "syncs-first_block_cache", later)]
    skip = {
        f"sana:{column}": outcomes.skipped(f"not checkable: {column} has no support here", "SanaSprintPipeline")
        for column in ("graph_breaks-first_block_cache", "alloc_growth")
    }
    notes = set()
    for order in (slice(None), slice(None, None, -1)):
        coverage = _coverage(reports[order], "SanaSprintPipeline", **dict(list(skip.items())[order]))
        (row,) = table.rows(reports[order], coverage)
        notes.add(row.note)
    assert notes == {"raises: ValueError: first"}
    reasons = set()
    for order in (slice(None), slice(None, None, -1)):
        (row,) = table.rows([], _coverage([], "SanaSprintPipeline", **dict(list(skip.items())[order])))
        reasons.add(row.note)
    assert reasons == {
        "not checked: not checkable: alloc_growth has no support here; "
        "not checked: not checkable: graph_breaks-first_block_cache has no support here"
    }


def test_a_verdict_whose_report_the_census_lacks_shows_no_number_and_is_not_judged() -> None:
    """A number means measured: a checked outcome without its report showed 0, and a diff against a census with the
    report judged it better (156 → 0)."""
    synced = [_report(WAN, "syncs", _sync(1)), _report(WAN, "alloc_growth")]
    coverage = _coverage(synced, "WanPipeline")
    (row,) = table.rows(synced[1:], coverage)
    assert row.cells["syncs"].text() == "no report" and not row.cells["syncs"].checked
    assert row.cells["alloc_growth"].text() == "0"
    result = diff(synced, coverage, synced[1:], coverage)
    assert result.changes == [] and result.one_sided == [(f"tests/pipelines/{WAN}", "syncs", "no report in the head")]


def test_parts_of_one_census_merge_into_one_table_and_coverage() -> None:
    first, first_coverage, second, second_coverage = _parts()
    merged = outcomes.merge([first_coverage, second_coverage])
    assert (len(merged.all()), merged.count(Verdict.CHECKED), len(merged.outcomes), merged.fully_checked) == (
        12,
        8,
        3,
        2,
    )
    rows = table.rows(first + second, merged)
    assert [(r.pipeline, r.short_tester) for r in rows] == [
        ("FluxPipeline", "test_flux.py::FluxFastTests"),
        ("GlmPipeline", "test_glm.py::GlmFastTests"),
        ("WanPipeline", "test_wan.py::WanFastTests"),
    ]
    glm = rows[1]
    assert {c.text() for c in glm.cells.values()} == {"not checked: hub repository missing"}
    assert glm.note.startswith("not checked: get_dummy_components() needs a hub repository")
    assert rows[0].cells["syncs"].text() == "0"


def test_the_coverage_counts_checks_and_fully_checked_classes_with_grouped_reasons() -> None:
    *_, coverage = _parts()
    coverage.import_failures["ModuleNotFoundError: No module named 'requests_mock'"] = ["a/test_a.py", "b/test_b.py"]
    assert coverage.summary() == [
        "nosync: 4 of 8 checks reached a verdict; 1 of 2 pipeline classes fully checked; 4 not checkable here:",
        "  4 check(s) of 1 class(es) not checkable here: get_dummy_components() needs a hub repository this machine "
        "cannot get: x (e.g. tests/pipelines/glm/test_glm.py::GlmFastTests::syncs)",
        "nosync: 2 test module(s) could not be imported: ModuleNotFoundError: No module named 'requests_mock' — "
        "install diffusers' test dependencies (docs/census/README.md lists them) (e.g. a/test_a.py)",
    ]
    again = Coverage.from_dict(json.loads(json.dumps(coverage.to_dict())))
    assert again.summary() == coverage.summary()


def test_the_coverage_says_the_same_whatever_order_its_outcomes_arrived_in() -> None:
    """The summary's groups of one size, and the example each names, do not follow the order the workers finished
    in: two runs of one census said their 4-check reasons in another order (G1 against Q5), S against S3 too."""
    hub = outcomes.skipped("needs a hub repository", "GlmPipeline")
    offload = outcomes.skipped("not checkable: offloading needs an accelerator", "WanPipeline")
    raised = [
        _raise(t, c, "KeyError", "x", "/d/diffusers/a.py:1") for t in (WAN, FLUX) for c in ("syncs", "alloc_growth")
    ]
    arrivals = [
        [
            ("glm", "syncs", hub),
            ("glm", "alloc_growth", hub),
            ("sana", "syncs", offload),
            ("sana", "host_overhead", offload),
        ],
        [
            ("sana", "host_overhead", offload),
            ("glm", "alloc_growth", hub),
            ("sana", "syncs", offload),
            ("glm", "syncs", hub),
        ],
    ]
    said = set()
    for order, arrived in zip((raised, raised[::-1]), arrivals, strict=True):
        coverage = _coverage(order, "P")
        for tester, column, outcome in arrived:
            coverage.add(f"tests/pipelines/{dict(sana=SANA, glm=GLM)[tester]}", column, outcome)
        said.add(tuple(coverage.summary()))
        assert list(coverage.reasons(Verdict.SKIPPED)) == [
            "needs a hub repository",
            "not checkable: offloading needs an accelerator",
        ]
    assert len(said) == 1, said


def test_a_collection_error_names_its_last_line() -> None:
    text = (
        "ImportError while importing test module 'x.py'.\nTraceback:\n  ...\n"
        "E   ModuleNotFoundError: No module named 'x'"
    )
    assert outcomes.import_error(text) == "ModuleNotFoundError: No module named 'x'"


def _write(tmp_path: Path, name: str, reports: list[Report], coverage: Coverage, diffusers: str = "0.40.0") -> str:
    doc = run_report.document(reports, {"diffusers": diffusers, "backend": "cuda"}, {"census": coverage.to_dict()})
    (tmp_path / name).write_text(json.dumps(doc))
    return str(tmp_path / name)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_nosync", *args], capture_output=True, text=True)


def test_the_command_renders_a_census_run_in_parts(tmp_path: Path) -> None:
    first, first_coverage, second, second_coverage = _parts()
    paths = [_write(tmp_path, "p0.json", first, first_coverage), _write(tmp_path, "p1.json", second, second_coverage)]
    done = _cli("census", *paths, "--title", "T")
    assert done.returncode == 0, done.stderr
    assert (
        "8 of 12 checks reached a verdict; 2 of 3 pipeline tester classes fully checked; 1 with a sync in their "
        "steady steps, 0 raised." in done.stdout
    )
    assert done.stdout.count("\n| ") == 5  # the header, its separator and three classes
    assert _cli("census", "table", *paths).stdout == _cli("census", *paths, "--title", "Census").stdout


def test_a_census_of_another_schema_is_one_sentence(tmp_path: Path) -> None:
    first, coverage, _, _ = _parts()
    doc = run_report.document(first, {}, {"census": {"classes": 1, "checked": 1, "not_checked": {}, "outcomes": {}}})
    (tmp_path / "old.json").write_text(json.dumps(doc))
    for args in (("census", str(tmp_path / "old.json")), ("census", "diff", str(tmp_path / "old.json"),
                                                          _write(tmp_path, "new.json", first, coverage))):  # fmt: skip
        done = _cli(*args)
        assert done.returncode == 4 and done.stdout == ""
        assert done.stderr.count("\n") == 1 and "has a census of schema none, not pytest-nosync-census/2" in done.stderr


def _synced(count: int, where: str = UNIPC) -> list[Report]:
    return [_report(WAN, "syncs", _sync(1, where=where, count=count)), *(_report(WAN, c) for c in CHECKS[1:])]


def test_the_diff_names_a_new_sync_and_a_check_that_stopped_reaching_its_verdict(tmp_path: Path) -> None:
    base = _synced(2)
    head = [
        _report(WAN, "syncs", _sync(1, count=2), _sync(1, where="/x/diffusers/pipelines/wan/pipeline_wan.py:641")),
        _report(WAN, "graph_breaks", not_checked_finding("dynamo captured no graph of the denoiser in 2 call(s)")),
        *(_report(WAN, c) for c in CHECKS[2:]),
    ]
    result = diff(base, _coverage(base, "WanPipeline"), head, _coverage(head, "WanPipeline"))
    assert [(c.column, c.base.text(), c.head.text(), c.added) for c in result.worse] == [
        ("graph_breaks", "0", "not checked: no graph captured", []),
        ("syncs", "2: `diffusers/schedulers/scheduling_unipc_multistep.py:886`", "4: "
         "`diffusers/schedulers/scheduling_unipc_multistep.py:886`, `diffusers/pipelines/wan/pipeline_wan.py:641`",
         ["diffusers/pipelines/wan/pipeline_wan.py:641"]),
    ]  # fmt: skip
    paths = (
        _write(tmp_path, "base.json", base, _coverage(base, "WanPipeline")),
        _write(tmp_path, "head.json", head, _coverage(head, "WanPipeline"), "0.41.0"),
    )
    done = _cli("census", "diff", *paths)
    assert done.returncode == 1, done.stderr
    assert "diffusers 0.40.0 (base) → 0.41.0 (head)" in done.stdout and "**1 got worse**, 0 better" in done.stdout
    assert "| WanPipeline | test_wan.py::WanFastTests | syncs per steady step | 2: " in done.stdout
    better = _cli("census", "diff", paths[1], paths[0])
    assert better.returncode == 0 and "**0 got worse**, 1 better" in better.stdout


def test_the_diff_names_a_check_of_a_class_in_both_that_one_census_ran_and_the_other_did_not(tmp_path: Path) -> None:
    """Not judged, but named, as its docstring says: the diff of a head that no longer ran Wan's graph check said
    only the classes run in one census, and nothing of the check."""
    base = [_report(WAN, c) for c in CHECKS] + [_report(FLUX, "syncs")]
    head = [_report(WAN, c) for c in CHECKS if c != "graph_breaks"] + [
        _report(FLUX, "syncs"),
        _report(FLUX, "alloc_growth"),
    ]
    result = diff(base, _coverage(base, "P"), head, _coverage(head, "P"))
    assert result.one_sided == [
        (f"tests/pipelines/{FLUX}", "alloc_growth", "not run in the base"),
        (f"tests/pipelines/{WAN}", "graph_breaks", "not run in the head"),
    ]
    paths = (_write(tmp_path, "base.json", base, _coverage(base, "P")),
             _write(tmp_path, "head.json", head, _coverage(head, "P")))  # fmt: skip
    done = _cli("census", "diff", *paths)
    assert done.returncode == 0, done.stderr
    assert (
        "Checks of classes run in both that one census has and the other has not (not judged): 2: "
        "`test_flux.py::FluxFastTests` growth (not run in the base)"
    ) in done.stdout, done.stdout
    assert "`test_wan.py::WanFastTests` graph breaks, recompiles (not run in the head)." in done.stdout


def test_a_diff_of_censuses_without_a_class_in_common_is_one_sentence(tmp_path: Path) -> None:
    first, first_coverage, second, second_coverage = _parts()
    with pytest.raises(NothingInCommon):
        diff(first, first_coverage, second, second_coverage)
    done = _cli(
        "census", "diff", _write(tmp_path, "a.json", first, first_coverage), _write(tmp_path, "b.json", second,
                                                                                     second_coverage)
    )  # fmt: skip
    assert done.returncode == 4 and "ran no pipeline class in common" in done.stderr and done.stdout == ""


@pytest.mark.parametrize(
    ("reason", "cell"),
    [
        ("first_block_cache: LoopDenoiser has no enable_cache (it is no CacheMixin)", "no CacheMixin"),
        (
            "attention_backend_flash: Flash Attention backend 'flash' is not usable because of missing package or the "
            "version is too old. Please install `flash-attn>=2.6.3`.",
            "needs flash-attn",
        ),
        (
            "sea_cache: diffusers has no model adapter for FluxTransformer2DModel (it has Cosmos 3's and Wan "
            "text-to-video's): it would cache nothing",
            "no model adapter",
        ),
        ("sea_cache: diffusers 0.36.0 has no SeaCacheConfig", "no SeaCacheConfig"),
        (
            "components_auto_offload: FluxPipeline is no ModularPipeline (a classic pipeline offloads with "
            "enable_model_cpu_offload)",
            "not modular",
        ),
        ("a reason no pattern knows, said at some length", "a reason no pattern knows, said at some…"),
    ],
)
def test_a_reason_is_shortened_to_its_gist_for_a_cell(reason: str, cell: str) -> None:
    from pytest_nosync.census.table import short_reason

    assert short_reason(reason) == cell


def test_a_scenario_map_of_another_check_says_what_its_cells_count(tmp_path: Path) -> None:
    """A map of graph breaks is no map of syncs per steady step: its summary and its picture's colour bar name the
    check's own count (a graph-break map once said "Added nothing to any pipeline's steady steps")."""
    from pytest_nosync.census.scenario_map import ScenarioMap
    from pytest_nosync.census.table import Cell

    checked = CheckOutcome(Verdict.CHECKED, passed=True)
    cells = {("FluxPipeline", "plain"): Cell(checked, 1), ("FluxPipeline", "lora"): Cell(checked, 1),
             ("FluxPipeline", "layerwise_casting"): Cell(CheckOutcome(Verdict.CHECKED, passed=False), 13)}  # fmt: skip
    environment = {"diffusers": "0.42.1", "torch": "2.13.0", "backend": "cuda", "device": "H100"}
    breaks = ScenarioMap("graph_breaks", ["FluxPipeline"], ["plain", "lora", "layerwise_casting"], cells)
    text = breaks.markdown("T", environment)
    assert "- `layerwise_casting`: more in 1, as many in 0, fewer in 0" in text
    assert "Added nothing to any pipeline (graph breaks, recompiles): `lora`." in text
    assert "steady steps" not in text.split("A cell is")[0] + text.split("(pipelines where")[1]
    syncs = ScenarioMap("syncs", ["FluxPipeline"], ["plain", "lora", "layerwise_casting"], cells)
    assert "Added nothing to any pipeline's steady steps: `lora`." in syncs.markdown("T", environment)

    labels: list[str] = []
    pytest.importorskip("matplotlib")
    import matplotlib.figure

    from pytest_nosync.census.heat_map import plot

    original = matplotlib.figure.Figure.colorbar
    with pytest.MonkeyPatch.context() as patch:  # read the colour bar's label as plot() sets it
        patch.setattr(matplotlib.figure.Figure, "colorbar",
                      lambda self, *a, **k: labels.append(k["label"]) or original(self, *a, **k))  # fmt: skip
        plot(breaks, str(tmp_path / "breaks.png"), "T")
    assert [label.replace("\n", " ") for label in labels] == ["graph breaks, recompiles (log scale)"]  # (wrapped)


@pytest.mark.parametrize(
    ("check", "pipelines", "scenarios"),
    [
        ("syncs", ["FluxPipeline", "QwenImagePipeline", "WanPipeline"], ["plain", "first_block_cache", "lora"]),
        ("cudagraphs", ["FluxPipeline"], ["plain"]),  # the longest label on the smallest map
        ("graph_breaks", [f"Pipeline{i}" for i in range(40)], ["plain", "attention_backend_efficient"]),
    ],
)
def test_the_heat_maps_colour_bar_label_is_inside_the_picture(
    tmp_path: Path, check: str, pipelines: list[str], scenarios: list[str]
) -> None:
    """The label runs along the colour bar, which is as tall as the map: on a small map it ran past the picture's top
    and bottom edges, cut ("cs per steady step (log scal")."""
    pytest.importorskip("matplotlib")
    import matplotlib.figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from pytest_nosync.census.heat_map import plot
    from pytest_nosync.census.scenario_map import ScenarioMap
    from pytest_nosync.census.table import Cell

    checked = CheckOutcome(Verdict.CHECKED, passed=False)
    cells = {(p, s): Cell(checked, i + j) for i, p in enumerate(pipelines) for j, s in enumerate(scenarios)}
    saved: list[matplotlib.figure.Figure] = []
    original = matplotlib.figure.Figure.savefig
    with pytest.MonkeyPatch.context() as patch:  # the figure as plot() saves it
        patch.setattr(
            matplotlib.figure.Figure, "savefig", lambda self, *a, **k: saved.append(self) or original(self, *a, **k)
        )
        plot(ScenarioMap(check, pipelines, scenarios, cells), str(tmp_path / "map.png"), "Scenario census")
    (figure,) = saved
    canvas = FigureCanvasAgg(figure)  # plot() closed it: drawn again, as saved
    canvas.draw()
    renderer = canvas.get_renderer()
    picture = figure.bbox
    texts = [t for axes in figure.axes for t in (axes.yaxis.label, axes.title, *axes.get_xticklabels(),
                                                 *axes.get_yticklabels()) if t.get_text()]  # fmt: skip
    assert any(t.get_text().endswith("(log scale)") for t in texts)
    for text in texts:
        box = text.get_window_extent(renderer)
        inside = box.x0 >= picture.x0 - 1 and box.x1 <= picture.x1 + 1 and box.y0 >= picture.y0 - 1
        assert inside and box.y1 <= picture.y1 + 1, (text.get_text(), box, picture)


def _raise(tester: str, column: str, exception: str, message: str, where: str) -> Report:
    """A check whose pipeline raised, as guarded_call records it: an `error` finding at the raise site."""
    data = {"exception": exception, "message": message, "diffusers": "0.42.1"}
    first = message.splitlines()[0]
    error = Finding("error", where, step=0, status=Status.FAIL, detail=f"{exception}: {first} (diffusers 0.42.1)",
                    data=data)  # fmt: skip
    return _report(tester, column, error)


def test_a_raised_cell_says_what_raised_once_per_cause() -> None:
    """A `raised` cell points at a footnote saying the exception, its first line and its raise site, one per cause
    (type and site), most frequent first; the outcome carries them in the JSON and the summary groups by them."""
    faster = "/ckpt/src/diffusers/hooks/faster_cache.py:470"
    reports = [
        _raise(WAN, "syncs-faster_cache", "IndexError", "tuple index out of range", faster),
        _raise(FLUX, "syncs-faster_cache", "IndexError", "tuple index out of range\nmore", faster),
        _raise(
            GLM,
            "syncs-faster_cache",
            "ValueError",
            "No context is set. `cache_context` first.",
            "/other/diffusers/hooks/hooks.py:44",
        ),
        _report(SANA, "syncs-faster_cache"),
    ]
    coverage = _coverage(reports, "P")
    flux = coverage.outcomes[f"tests/pipelines/{FLUX}"]["syncs-faster_cache"]
    assert (flux.verdict, flux.exception, flux.message, flux.where) == (
        Verdict.RAISED, "IndexError", "tuple index out of range", "diffusers/hooks/faster_cache.py:470"
    )  # fmt: skip
    assert CheckOutcome.from_dict(json.loads(json.dumps(flux.to_dict()))) == flux

    text = table.render(reports, coverage, {}, "T")
    assert text.count("| raised [^r1] |") == 2 and text.count("| raised [^r2] |") == 1
    assert text.splitlines()[-2:] == [
        "[^r1]: `IndexError: tuple index out of range` at `diffusers/hooks/faster_cache.py:470` (2 checks)",
        "[^r2]: `` ValueError: No context is set. `cache_context` first. `` at `diffusers/hooks/hooks.py:44` (1 check)",
    ]
    from pytest_nosync.census.scenario_map import scenario_map

    markdown = scenario_map(reports, coverage).markdown("T", {})
    assert "| raised [^r1] |" in markdown and markdown.rstrip().endswith("(1 cell)")
    assert (
        "  2 check(s) of 2 class(es) raised IndexError at diffusers/hooks/faster_cache.py:470: tuple index out of "
        f"range (e.g. tests/pipelines/{FLUX}::syncs-faster_cache)"  # the first by tester, not the first to arrive
    ) in coverage.summary()


def test_the_upstream_list_gives_each_cause_its_pipelines_and_a_command_that_reproduces_it(tmp_path: Path) -> None:
    faster = "/ckpt/src/diffusers/hooks/faster_cache.py:464"
    reports = [
        _raise(WAN, "syncs-faster_cache", "IndexError", "tuple index out of range", faster),
        _raise(FLUX, "syncs-faster_cache", "IndexError", "tuple index out of range", faster),
        _report(SANA, "syncs-faster_cache"),
    ]
    coverage = _coverage(reports, "WanPipeline")
    done = _cli("census", "raises", _write(tmp_path, "r.json", reports, coverage), "--title", "T")
    assert done.returncode == 0, done.stderr
    assert "## r1. `IndexError: tuple index out of range` at `diffusers/hooks/faster_cache.py:464`" in done.stdout
    assert "- 2 cell(s) under `faster_cache` (2)" in done.stdout
    assert (
        f'- reproduce: `pytest "tests/pipelines/{FLUX}::nosync[syncs-faster_cache]" --nosync --nosync-checks=syncs '
        "--nosync-scenarios=faster_cache`"
    ) in done.stdout


def test_an_untested_class_is_reproduced_through_its_sibling_and_its_keyword() -> None:
    """Its checks are added after collection: a node id of theirs is not found, its sibling's with `-k` is."""
    from pytest_nosync.census.upstream import upstream_list

    raised = CheckOutcome(Verdict.RAISED, False, "TypeError: x", exception="TypeError", message="x", where="d/p.py:807")
    tester = ids.untested_tester(f"tests/pipelines/{FLUX}", "FluxControlPipeline")
    row = table.Row("FluxControlPipeline", tester, {"syncs": table.Cell(raised)})
    text = upstream_list([row], {}, "T")
    assert (
        f'- reproduce: `pytest "tests/pipelines/{FLUX}" -k "untested and FluxControlPipeline" --nosync '
        "--nosync-checks=syncs --nosync-scenarios=plain`"
    ) in text, text


def test_a_report_joins_its_row_at_its_own_check_and_scenario() -> None:
    """The table puts a report in the column its `check` and `scenario` say (the tester's row from its test id)."""
    reports = [_report(WAN, "syncs", _sync(1)), _report(WAN, "syncs-lora", _sync(1, count=5))]
    coverage = _coverage(reports, "WanPipeline")
    assert reports[1].check == "syncs" and reports[1].scenario == "lora"
    (row,) = table.rows(reports, coverage)
    assert (row.tester, row.cells["syncs"].count, row.cells["syncs-lora"].count) == (f"tests/pipelines/{WAN}", 2, 5)


def test_a_raise_recorded_before_outcomes_said_what_raised_is_read_from_its_report() -> None:
    """A report written by an earlier release has raised outcomes with a reason only: its `error` finding says the
    cause, so its table gets the footnotes too."""
    report = _raise(WAN, "syncs", "IndexError", "tuple index out of range", "/c/diffusers/hooks/faster_cache.py:470")
    coverage = Coverage()
    coverage.add(f"tests/pipelines/{WAN}", "syncs", CheckOutcome(Verdict.RAISED, False, "IndexError: tuple index"))
    (row,) = table.rows([report], coverage)
    assert row.cells["syncs"].outcome.where == "diffusers/hooks/faster_cache.py:470"
