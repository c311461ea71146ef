"""The torch settings every call of a pipeline the project builds runs under (suite.guarded_call's guarded calls and
the warm-ups before them: the suite's and the census's checks, the step metrics and their counts made ahead, the
regression cases; the census's building and calibrating calls): torch's own defaults, whatever the modules collected
beside them set.

diffusers' test modules switch deterministic algorithms on when they are imported (`enable_full_determinism()`), and
Z-Image's switch them off again, so the setting a tester's checks ran under depended on which test modules the run
collected: all of tests/pipelines (Z-Image last: off) or a family or a --nosync-changed selection (on). Deterministic
algorithms change what a step runs: on a GPU, `F.pad(..., mode="replicate")` imports a decomposition inside the
denoiser, a graph break that only such a run showed (HeliosPipeline). A pipeline's users run it with them off.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def torch_defaults() -> Iterator[None]:
    """Deterministic algorithms off inside; the process's setting (and its warn-only flag) put back on exit."""
    mode = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(False)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(mode, warn_only=warn_only)
