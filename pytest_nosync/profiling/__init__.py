"""Traces of guarded blocks and what they say (docs/profiling.md).

trace     read a torch.profiler Chrome trace (nesting, correlation, steps, regions, memory)
classify  what a GPU event is: layout transform, copy, transfer, compiled
diagnose  Trace → Diagnosis (plain data): GPU idle and gaps, launch delays, kernels, waste, syncs, memory
budgets   Diagnosis → Findings, against limits that are off until set
render    Diagnosis → text
config    TraceConfig / ProfilerOptions: how a guarded block is traced
ranges    record_function and NVTX ranges, the cudaProfilerStart/Stop window
session   one torch.profiler session
export    trace files: names per test id, Perfetto-ready JSON (gzip)
tracer    the Detector that ties these to a guard
cli       python -m pytest_nosync profile|diagnose
"""
