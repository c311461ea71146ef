"""hub_reachable: offline settings answer False at once; otherwise a connection to the endpoint decides."""

from __future__ import annotations

import socket

import pytest

from pytest_nosync.census.hub_standins import hub_reachable


@pytest.fixture
def online_settings(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    return monkeypatch


@pytest.mark.parametrize("variable", ["HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"])
def test_offline_variables_mean_unreachable(online_settings: pytest.MonkeyPatch, variable: str) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        from huggingface_hub import constants

        online_settings.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
        assert hub_reachable(timeout_s=1.0)  # the endpoint answers...
        online_settings.setenv(variable, "1")
        assert not hub_reachable(timeout_s=1.0)  # ...but offline was asked for


def test_a_closed_endpoint_is_unreachable(online_settings: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: connections are refused
        online_settings.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{port}")
        assert not hub_reachable(timeout_s=1.0)
