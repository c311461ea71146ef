"""Traces and what they say (docs/profiling.md). Pure: a trace file in, plain data and text out; nothing here
runs a profiler or knows of the guard, the detectors or pytest.

trace     read a torch.profiler Chrome trace (nesting, correlation, steps, regions, memory)
classify  what a GPU event is: layout transform, copy, transfer, compiled
diagnose  Trace → TraceDiagnosis (plain data): GPU idle and gaps, launch delays, kernels, waste, syncs, memory
budgets   TraceDiagnosis → Findings, against limits that are off until set
render    TraceDiagnosis → text
config    TraceConfig / ProfilerOptions: how a guarded block is traced (plain data)
export    trace files: names per test id, Perfetto-ready JSON (gzip)
"""
