"""Tiny, offline, random-weight builds of the pipelines the suite checks (see `registry.TARGETS`)."""
