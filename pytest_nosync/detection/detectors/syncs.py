"""The syncs check: which detectors see syncs on each backend, and whether the device did any work to see.

cuda: torch's sync debug mode, explicit synchronize calls, and (opt-in) the profiler confirming each one.
emulate: the stand-in device's own op hook, and explicit synchronize calls. No profiler confirmation there: the
emulated device has no CUDA syncs for a profiler to see.
"""

from __future__ import annotations

from ..guard_options import GuardOptions
from .base import Detector
from .cuda_sync import CudaSyncDetector
from .device_work import DeviceWorkDetector
from .emulated import EmulatedSyncDetector
from .explicit_sync import ExplicitSyncDetector
from .profiler_sync import ProfilerSyncDetector


def detectors(options: GuardOptions) -> list[Detector]:
    # first: it refuses a pipeline that is not on the backend's device before anything is armed
    found: list[Detector] = [DeviceWorkDetector(options), ExplicitSyncDetector(options)]
    if options.backend == "cuda":
        found.append(CudaSyncDetector(options))
        if options.profile:
            found.append(ProfilerSyncDetector(options))
        return found
    return [*found, EmulatedSyncDetector(options)]
