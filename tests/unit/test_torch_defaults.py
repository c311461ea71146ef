"""suite.torch_defaults: a check's calls run with deterministic algorithms off, and the process's setting comes back
whole (the warn-only flag too), also when the check raises."""

from __future__ import annotations

import pytest
import torch

from pytest_nosync.suite.torch_defaults import torch_defaults


@pytest.mark.usefixtures("deterministic_algorithms_restored")
def test_deterministic_algorithms_are_off_inside_and_put_back_after_a_raise() -> None:
    torch.use_deterministic_algorithms(True, warn_only=True)
    with pytest.raises(ValueError, match="the check raised"), torch_defaults():
        assert not torch.are_deterministic_algorithms_enabled()
        raise ValueError("the check raised")
    assert torch.are_deterministic_algorithms_enabled()
    assert torch.is_deterministic_algorithms_warn_only_enabled()
