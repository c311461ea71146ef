#!/usr/bin/env bash
# The GPU validation behind docs/validation.md, in one go on a CUDA machine.
# Usage: scripts/gpu-validation.sh OUT_DIR   (diffusers and this package importable; run from the repo root)
set -uo pipefail
out=${1:?output directory}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
log() { echo "== $*"; }

log "whole GPU run: pytest -m gpu --nosync (suite, regression cases, twins), with the repository baseline"
start=$(date +%s.%N)
python3 -m pytest -m gpu --nosync -p no:cacheprovider -q -rs --nosync-report "$out/report-full.json" \
  > "$out/gpu-full.log" 2>&1
log "rc=$? wall=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")s"
tail -n 3 "$out/gpu-full.log"

log "target suite alone, process start to end"
start=$(date +%s.%N)
python3 -m pytest -m gpu --nosync -p no:cacheprovider -q pytest_nosync/suite/test_targets.py \
  2>&1 | tail -n 3
log "suite wall=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")s"

log "guard overhead"
python3 benchmarks/guard_overhead.py --calls 40 --json "$out/overhead-stack.json" | tail -n 30
python3 benchmarks/guard_overhead.py --calls 40 --target flux --json "$out/overhead-flux.json" | tail -n 30

log "trace tests and costs"
python3 -m pytest -m gpu -p no:cacheprovider -q tests/profiling 2>&1 | tail -n 15
python3 benchmarks/trace_overhead.py 2>&1 | tail -n 20

log "diagnosis of two targets, eager and compiled"
for target in flux wan; do
  for mode in eager compile; do
    log "profile $target $mode"
    trace="$out/trace-$target-$mode.json"
    python3 -m pytest_nosync profile --target "$target" --mode "$mode" --device cuda --steps 2 \
      --out "$trace" --gzip 2>&1 | tail -n 60
  done
done
