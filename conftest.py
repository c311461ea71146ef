"""The repository's shared test fixtures: the backend parametrization of detector tests, and pytester for the
tests that run real pytest sessions."""

from __future__ import annotations

import pytest
import torch

from pytest_nosync import emulation
from pytest_nosync.detection import devices

# Installed, the emulation is torch's current accelerator for the rest of the process (pin_memory() pins for it and
# fails): on a CUDA machine it would change what the CUDA tests run. There the emulated tests run last and the
# emulation is installed before the first of them; `-m gpu` selects none and never installs it.
CUDA_HERE = torch.cuda.is_available()
if not CUDA_HERE and emulation.unavailable_reason() is None:
    emulation.install()  # its registrations (and torch.emu in sys.modules) must predate every pytester snapshot

BACKEND_PARAMS = [pytest.param("cuda", marks=pytest.mark.gpu, id="cuda"), pytest.param("emulate", id="emulate")]


def pytest_configure(config: pytest.Config) -> None:
    # pytester, for the tests that run real pytest sessions. A hook, not `pytest_plugins`: pytest also reaches this
    # file from outside the repository when it collects the suite of an editable install (`--nosync-suite` from a
    # diffusers checkout walks up from pytest_nosync/suite), and there `pytest_plugins` is refused.
    if not config.pluginmanager.has_plugin("pytester"):
        config.pluginmanager.import_plugin("pytester")


XDIST_WORKER_VARIABLES = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


@pytest.fixture(autouse=True)
def _sessions_of_their_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """With `-n`, each test runs in an xdist worker, whose variables the pytest sessions a test starts would inherit
    and take themselves for workers (pytest-benchmark disables itself, the plugin skips its graph helpers): a test's
    own sessions run as they would from a plain `pytest`."""
    for name in XDIST_WORKER_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def _emulated(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    return callspec is not None and callspec.params.get("backend") == "emulate"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The end-to-end tests that start processes of their own run when a marker expression names them (`-m slow`,
    # `-m "gpu and slow"`): `-m gpu` replaces pyproject's `-m "not slow"`, and the main job on a GPU ran them too
    # (a real MPS daemon's xdist session, 25 s of its 140 on an H200).
    if "slow" not in (config.option.markexpr or ""):
        slow = [item for item in items if item.get_closest_marker("slow") is not None]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [item for item in items if item.get_closest_marker("slow") is None]
    if CUDA_HERE:
        items.sort(key=_emulated)  # stable: each group keeps its order


def pytest_runtest_setup(item: pytest.Item) -> None:
    # Before the test's fixtures: outside any pytester snapshot.
    if CUDA_HERE and _emulated(item) and emulation.unavailable_reason() is None:
        emulation.install()


@pytest.fixture(params=BACKEND_PARAMS)
def backend(request: pytest.FixtureRequest) -> str:
    """Each detector test runs on every backend that exists here: CUDA on a GPU, emulation on the CPU."""
    name = request.param
    if name == "cuda" and not devices.cuda_available():
        pytest.skip(devices.CUDA_ONLY)  # not advice to run what was just run: the count and the reason, once
    try:
        devices.resolve(name)
    except devices.BackendUnavailable as exc:
        pytest.skip(str(exc))
    return name


@pytest.fixture
def device(backend: str) -> torch.device:
    return devices.execution_device(backend)


@pytest.fixture
def x(device: torch.device) -> torch.Tensor:
    """Eight values on the device, made before any guard is armed."""
    values = torch.tensor([0.5, -1.0, 2.0, 3.5, -0.25, 1.5, 12.0, -3.0])
    return values.to(device)
