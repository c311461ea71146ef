"""The package's public names, imported on first use (the plugin's import must not pull in torch)."""

from __future__ import annotations

import pytest

import pytest_nosync


def test_every_public_name_resolves_and_is_listed_once() -> None:
    for name in pytest_nosync.__all__:
        assert getattr(pytest_nosync, name).__name__ == name
    listed = dir(pytest_nosync)
    assert set(pytest_nosync.__all__) <= set(listed)
    assert len(listed) == len(set(listed))  # a name imported on first use is listed once


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nosync_gaurd'"):
        pytest_nosync.nosync_gaurd  # noqa: B018
