"""The diffusers release the plugin's tests run against: a test of a real pipeline expects what that release does."""

from __future__ import annotations

from packaging.version import Version

from pytest_nosync.policy import AllowEntry


def diffusers_before(release: str) -> bool:
    """Whether the installed diffusers is older than `release` (a development version of it counts as the release)."""
    import diffusers

    return Version(diffusers.__version__).release < Version(release).release


def uncached_hook_walks() -> tuple[AllowEntry, ...]:
    """Before diffusers cached its hook registries, entering and leaving a pipeline's `cache_context` walked the
    transformer's module tree in every step: host_overhead fails a stock pipeline there. Tests about something else
    allow it on those releases (the regression case that names it is the suite's test_cache_context_does_not_walk)."""
    from diffusers.hooks.hooks import HookRegistry

    if hasattr(HookRegistry, "_get_child_registries"):
        return ()
    return (AllowEntry("*/diffusers/hooks/hooks.py", "this diffusers' uncached hook registries", ("host_overhead",)),)
