"""Judging one run's step metrics against a saved run's: exact device ops by line, times with a tolerance, memory,
wins, and runs that cannot be compared."""

from __future__ import annotations

import copy

import pytest

from pytest_nosync import render, step_cost
from pytest_nosync.findings import Report
from pytest_nosync.step_cost import NotComparable, Tolerance, combine, compare, parse_tolerances

ABOUT = {"target": "flux", "backend": "emulate", "device": "cpu", "torch": "2.13", "diffusers": "0.42.1", "steps": 3}
LOOP = "diffusers/pipelines/flux/pipeline_flux.py:640"
SITE = {"where": "diffusers/schedulers/s.py:300", "function": "S.step", "code": "x = a * b", "occurrence": 0}


def _timed(host: float, outside: float, peak: int, device: float | None = None) -> dict:
    return {
        str(step): {"host_ms": host, "host_ms_outside_denoiser": outside, "device_ms": device, "peak_bytes": peak}
        for step in range(3)
    }


def _counted(mul: int = 10, line: int = 300) -> dict:
    site = {**SITE, "where": f"diffusers/schedulers/s.py:{line}", "ops": {"aten.mul.Tensor": mul}}
    return {str(step): {"total": mul, "ops": {"aten.mul.Tensor": mul}, "sites": [site]} for step in range(3)}


def numbers(outside: float = 2.0, peak: int = 1000, mul: int = 10, line: int = 300, **about: str) -> dict:
    timed = [_timed(10.0, outside, peak), _timed(12.0, outside + 1.0, peak), _timed(11.0, outside, peak)]
    return combine(timed, _counted(mul, line), steady_from=1, about={**ABOUT, **about})


def test_combine_keeps_the_steady_steps_and_the_median_of_the_rounds() -> None:
    got = numbers()
    assert set(got["steps"]) == {"1", "2"} and got["rounds"] == 3
    step = got["steps"]["1"]
    assert (step["host_ms"], step["host_ms_outside_denoiser"], step["device_ops"]) == (11.0, 2.0, 10)
    assert step["host_ms_outside_denoiser_rounds"] == [2.0, 3.0, 2.0] and step["device_ms"] is None


def test_the_same_numbers_pass_without_wins() -> None:
    comparison = compare(numbers(), numbers(), where=LOOP)
    assert comparison.findings == [] and comparison.wins == []


def test_ten_more_ops_fail_at_the_line_that_issued_them() -> None:
    comparison = compare(numbers(mul=10), numbers(mul=20), where=LOOP)
    assert [(f.kind, str(f.where), f.step, f.count) for f in comparison.findings] == [
        ("device_ops", "diffusers/schedulers/s.py:300", 1, 10),
        ("device_ops", "diffusers/schedulers/s.py:300", 2, 10),
    ]
    detail = comparison.findings[0].detail
    assert "aten.mul.Tensor +10 at this line" in detail and "10 → 20 device ops (+10)" in detail


def test_a_line_that_only_moved_is_the_same_site() -> None:
    assert compare(numbers(line=300), numbers(line=310), where=LOOP).findings == []


SCHEDULER = """\
class S:
    def step(self, a, b):
        x = a * b
        return x
"""


def _unidentified(numbers_: dict, where: str) -> dict:
    for step in numbers_["steps"].values():
        step["sites"] = [{"where": where, "ops": site["ops"]} for site in step["sites"]]
    return numbers_


def test_sites_are_identified_from_the_files_only_when_a_step_has_more_ops(tmp_path) -> None:
    """The counting detector gives sites by place; a comparison that finds more ops identifies them then, so that
    a line moved by an edit above it is still the site the saved run knows."""
    edited = tmp_path / "s.py"
    edited.write_text("import torch\n\n" + SCHEDULER)  # the saved run's line 3 is line 5 now
    saved = numbers(mul=10, line=3)
    for step in saved["steps"].values():
        step["sites"] = [{**s, "where": f"{edited}:3", "function": "S.step"} for s in step["sites"]]
    same = _unidentified(numbers(mul=10), f"{edited}:5")
    assert compare(saved, same, where=LOOP).findings == []
    assert all("code" not in s for step in same["steps"].values() for s in step["sites"])  # nothing to identify
    more = _unidentified(numbers(mul=20), f"{edited}:5")
    found = compare(saved, more, where=LOOP).findings
    assert [(str(f.where), f.step, f.count) for f in found] == [(f"{edited}:5", 1, 10), (f"{edited}:5", 2, 10)]


def test_identify_sites_reads_function_code_and_occurrence(tmp_path) -> None:
    source = tmp_path / "s.py"
    source.write_text(SCHEDULER)
    got = step_cost.identify_sites(_unidentified(numbers(), f"{source}:3"))
    (site,) = got["steps"]["1"]["sites"]
    assert (site["function"], site["code"], site["occurrence"]) == ("S.step", "x = a * b", 0)
    assert step_cost.identify_sites(copy.deepcopy(got)) == got  # identified sites are kept as they are


def test_a_saved_run_without_identities_is_matched_by_place() -> None:
    saved = _unidentified(numbers(mul=10), "diffusers/schedulers/s.py:300")
    found = compare(saved, _unidentified(numbers(mul=20), "diffusers/schedulers/s.py:300"), where=LOOP).findings
    assert [(str(f.where), f.count) for f in found] == [("diffusers/schedulers/s.py:300", 10)] * 2


def test_fewer_ops_and_less_memory_are_wins() -> None:
    comparison = compare(numbers(mul=20, peak=2000), numbers(mul=10, peak=1000), where=LOOP)
    assert comparison.findings == []
    assert "step 1: 20 → 10 device ops (-10)" in comparison.wins
    assert any("peak device memory" in w for w in comparison.wins)


@pytest.mark.parametrize(
    ("backend", "after", "fails"),
    [
        ("emulate", 7.9, False),  # 2.0 → 7.9: within the emulation's default, the larger of 100% and 6 ms
        ("emulate", 8.5, True),
        ("cuda", 3.9, False),  # within the larger of 100% and 0.5 ms on a GPU
        ("cuda", 4.5, True),
    ],
)
def test_host_ms_is_judged_with_its_backends_tolerance(backend: str, after: float, fails: bool) -> None:
    comparison = compare(numbers(outside=2.0, backend=backend), numbers(outside=after, backend=backend), where=LOOP)
    kinds = [(f.kind, str(f.where), f.step) for f in comparison.findings]
    assert kinds == ([("host_ms", LOOP, None)] if fails else [])


def test_a_floor_keeps_tiny_times_from_failing_on_noise() -> None:
    tolerances = {"host_ms": Tolerance(0.1, 1.0)}
    assert compare(numbers(outside=0.2), numbers(outside=0.9), tolerances, where=LOOP).findings == []
    assert compare(numbers(outside=0.2), numbers(outside=1.5), tolerances, where=LOOP).findings != []


def test_much_faster_is_a_win() -> None:
    comparison = compare(numbers(outside=9.0), numbers(outside=2.0), where=LOOP)  # 7 ms less: beyond the tolerance
    assert comparison.findings == [] and any("host ms outside the denoiser" in w for w in comparison.wins)


def test_more_peak_memory_fails_exactly_by_default() -> None:
    (finding,) = [f for f in compare(numbers(peak=1000), numbers(peak=1512), where=LOOP).findings if f.step == 1]
    assert (finding.kind, str(finding.where)) == ("peak_memory", LOOP) and "+512 bytes" in finding.detail


def test_another_backend_is_not_comparable() -> None:
    with pytest.raises(NotComparable, match="not comparable across backends"):
        compare(numbers(backend="cuda", device="NVIDIA H100"), numbers(), where=LOOP)
    saved = numbers()
    saved["schema"] = 0
    with pytest.raises(NotComparable, match="schema"):
        compare(saved, numbers(), where=LOOP)


def test_another_device_of_the_same_backend_is_compared_with_a_note() -> None:
    comparison = compare(numbers(device="NVIDIA A100"), numbers(device="NVIDIA H100"), where=LOOP)
    assert comparison.notes == ["the saved run was on NVIDIA A100, this one on NVIDIA H100"]


def test_tolerances_given_are_laid_over_the_backends_defaults() -> None:
    got = parse_tolerances(["host_ms=30%+0.2", "peak_memory=5%"])
    assert got == {"host_ms": Tolerance(0.3, 0.2), "peak_memory": Tolerance(0.05, 0.0)}
    assert step_cost.default_tolerances("emulate")["host_ms"] == Tolerance(1.0, 6.0)
    # 2.0 → 2.7 ms is within the emulation's default but not within 30%+0.2
    assert compare(numbers(outside=2.0), numbers(outside=2.7), got, where=LOOP).findings != []
    with pytest.raises(ValueError, match="NAME one of host_ms, device_ms, peak_memory"):
        parse_tolerances(["ops=1%"])
    with pytest.raises(ValueError, match="a percentage and an optional floor"):
        parse_tolerances(["host_ms=fast"])


def test_the_terminal_table_has_a_row_per_target_with_the_change() -> None:
    report = Report(target="flux", check="step_metrics", passed=False)
    report.metrics["step_metrics"] = numbers(mul=20)
    comparison = compare(numbers(mul=10), copy.deepcopy(report.metrics["step_metrics"]), where=LOOP)
    report.metrics["step_metrics_compared"] = {"with": "0001.json", **comparison.to_dict()}
    lines = render.step_metrics_table([report])
    assert lines[0] == "step metrics per steady step (emulate, cpu):"
    (row,) = [line for line in lines if line.strip().startswith("flux")]
    assert row.split()[1] == "20" and "FAIL: ops +10, host +0%, peak =" in row


def test_the_metrics_calls_stop_at_the_latents_where_the_pipeline_takes_an_output_type() -> None:
    from pytest_nosync.suite.measure import latents_only

    made = latents_only(lambda steps: {"num_inference_steps": steps, "output_type": "pt"})(3)
    assert made == {"num_inference_steps": 3, "output_type": "latent"}  # the decode after the steps is skipped
    assert latents_only(lambda steps: {"num_inference_steps": steps})(2) == {"num_inference_steps": 2}  # not added
