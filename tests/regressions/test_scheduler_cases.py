"""Regression cases 1 and 2 at the scheduler level: the fixed code passes, the pre-fix code is caught."""

from __future__ import annotations

import pytest
from diffusers import FlowMatchEulerDiscreteScheduler, UniPCMultistepScheduler

from pytest_nosync.detection.guard_options import GuardOptions
from pytest_nosync.suite.regressions import WAN_UNIPC, scheduler_loop, unipc_case, unipc_configs
from tests.twins import unipc_prefix


@pytest.mark.parametrize("config", unipc_configs(), ids=lambda c: c.id)
def test_unipc_configuration_runs_under_the_case(config, backend, device) -> None:
    """Every configuration people use runs through the case and reports what it sees."""
    report = unipc_case(config, device, options=GuardOptions(backend=backend))
    assert report.steps == 8
    for finding in report.findings:
        assert finding.kind in ("dtoh_sync", "htod_sync"), finding
        assert "scheduling_unipc_multistep.py" in finding.where.file, finding


@pytest.mark.parametrize(
    ("twin", "kinds", "marker"),
    [
        # device scalars read back into a list (dtoh), then the list copied up again (htod)
        (unipc_prefix.PreFixRksScheduler, {"dtoh_sync", "htod_sync"}, "# twin: torch.tensor(rks)"),
        (unipc_prefix.PreFixHalfScheduler, {"htod_sync"}, "# twin: torch.tensor([0.5])"),
    ],
    ids=["tensor_of_rks", "tensor_of_half"],
)
def test_unipc_case_catches_the_pre_fix_code(twin, kinds, marker, backend, device) -> None:
    scheduler = twin(**WAN_UNIPC.scheduler_kwargs(8))
    report = scheduler_loop(scheduler, device, 8, options=GuardOptions(backend=backend))
    expected = unipc_prefix.line_of(marker)
    at_twin = [f for f in report.failures if str(f.where) == expected]
    assert not report.passed
    assert at_twin and {f.kind for f in at_twin} <= kinds, report.findings
    assert {f.step for f in at_twin} >= {2, 3, 4, 5}


@pytest.mark.parametrize("cls", [FlowMatchEulerDiscreteScheduler, UniPCMultistepScheduler], ids=lambda c: c.__name__)
def test_without_set_begin_index_the_first_step_syncs(cls, backend, device) -> None:
    scheduler = cls(
        **({"prediction_type": "flow_prediction", "use_flow_sigmas": True} if cls is UniPCMultistepScheduler else {})
    )
    clean = scheduler_loop(scheduler, device, 4, options=GuardOptions(backend=backend))
    lookup = [f for f in clean.findings if any(fr.function == "index_for_timestep" for fr in f.stack)]
    assert lookup == []

    scheduler = cls(
        **({"prediction_type": "flow_prediction", "use_flow_sigmas": True} if cls is UniPCMultistepScheduler else {})
    )
    forgot = scheduler_loop(scheduler, device, 4, options=GuardOptions(backend=backend), begin_index=False)
    lookup = [f for f in forgot.failures if any(fr.function == "index_for_timestep" for fr in f.stack)]
    assert lookup and {f.step for f in lookup} == {0}, forgot.findings
    assert all("schedulers/scheduling_" in f.where.file for f in lookup)
