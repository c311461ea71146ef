"""Tiny, offline, random-weight builds of the pipelines the suite checks (see `registry.TARGETS`).

One module a pipeline, its tiny build and its call: flux, flux2_klein, qwenimage, wan, ltx2; what a target is (base),
what they share (_common), the registry (every target's record, side by side)."""
