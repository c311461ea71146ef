#!/usr/bin/env bash
# The GPU validation behind docs/validation.md, on a CUDA machine, from the repository root, in parts that each fit
# one call of the lent GPU machine.
#
#   scripts/gpu-validation.sh PART OUT_DIR
#
#   suite        the whole GPU run (suite, regression cases, twins, step metrics) with its JSON report; then the target
#                suite of OLD_ROOT (an earlier checkout, its package and diffusers on OLD_SITE) and of this checkout,
#                with and without the step metrics tests, interleaved twice: wall times side by side
#   overhead     guard overhead (paired ratios to the plain call, a sync's µs) of the package on OLD_SITE and of this
#                checkout, by the same benchmark; the whole GPU run of OLD_ROOT for its wall time
#   metrics      the step metrics' run-to-run spread (ten fresh runs) and the step-metrics bug twins on this GPU
#   contributor  the suite from outside the repository (--nosync-suite) against each diffusers site in SITES
#   compare      OLD_ROOT (its package on OLD_SITE) against this checkout, interleaved twice: the whole GPU run and the
#                target suite, each with --durations and a JSON report; then this checkout's suite without the
#                step-metrics tests
#
# This checkout's package and diffusers must be importable (PYTHONPATH); see ../shared/device/README.md.
set -uo pipefail
part=${1:?part: suite, overhead, metrics, contributor or compare}
out=${2:?output directory}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
here=$(pwd)
log() { echo "== $*"; }
now() { date +%s.%N; }
since() { python3 -c "print(round($(now) - $1, 1))"; }
timed() {  # LABEL COMMAND...: run it, print its last lines and its wall time
  local label=$1 start
  shift
  start=$(now)
  "$@" > "$out/$label.log" 2>&1
  local rc=$?
  tail -n 2 "$out/$label.log"
  log "$label rc=$rc wall=$(since "$start")s"
}
suite_here() { python3 -m pytest -m gpu --nosync -q -p no:cacheprovider pytest_nosync/suite/test_targets.py "$@"; }
suite_old() { (cd "$OLD_ROOT" && PYTHONPATH="$OLD_SITE" python3 -m pytest -m gpu --nosync -q -p no:cacheprovider \
  pytest_nosync/suite/test_targets.py "$@"); }

nvidia-smi -L
python3 -c "import torch, diffusers; print('torch', torch.__version__, 'diffusers', diffusers.__version__)"

case "$part" in
suite)
  timed whole-new python3 -m pytest -m gpu --nosync -q -p no:cacheprovider --durations=40 \
    --nosync-report="$out/report-gpu.json"
  for round in 1 2; do
    [ -n "${OLD_ROOT:-}" ] && timed "suite-old-$round" suite_old --durations=30
    timed "suite-new-$round" suite_here --durations=30 --nosync-report="$out/suite-new-$round.json"
    timed "suite-new-without-metrics-$round" suite_here -k "not test_step_metrics"
  done
  ;;
overhead)
  if [ -n "${OLD_ROOT:-}" ]; then  # this checkout's benchmark, importing the earlier package
    (cd /tmp && PYTHONPATH="$OLD_SITE" python3 "$here/benchmarks/guard_overhead.py" \
      --json "$out/overhead-old.json") > "$out/overhead-old.log" 2>&1
    tail -n 40 "$out/overhead-old.log"
  fi
  python3 benchmarks/guard_overhead.py --json "$out/overhead-new.json" > "$out/overhead-new.log" 2>&1
  tail -n 40 "$out/overhead-new.log"
  if [ -n "${OLD_ROOT:-}" ]; then
    timed whole-old bash -c "cd '$OLD_ROOT' && PYTHONPATH='$OLD_SITE' python3 -m pytest -m gpu --nosync -q \
      -p no:cacheprovider --nosync-report='$out/report-gpu-old.json'"
  fi
  ;;
metrics)
  python3 benchmarks/step_metrics_spread.py --runs 10 --json "$out/spread-gpu.json" > "$out/spread-gpu.log" 2>&1
  tail -n 25 "$out/spread-gpu.log"
  timed metrics-twins python3 -m pytest -q -p no:cacheprovider tests/plugin/test_step_metrics_workflow.py \
    tests/detectors/test_step_metrics.py -rA
  ;;
compare)
  whole_old() { (cd "${OLD_ROOT:?}" && PYTHONPATH="${OLD_SITE:?}" python3 -m pytest -m gpu --nosync -q -p no:cacheprovider \
    "$@"); }
  for round in 1 2; do
    timed "whole-old-$round" whole_old --durations=40 --nosync-report="$out/whole-old-$round.json"
    timed "whole-new-$round" python3 -m pytest -m gpu --nosync -q -p no:cacheprovider --durations=40 \
      --nosync-report="$out/whole-new-$round.json"
    timed "suite-old-$round" suite_old --durations=30
    timed "suite-new-$round" suite_here --durations=30
  done
  timed suite-new-without-metrics suite_here -k "not test_step_metrics"
  ;;
contributor)
  mkdir -p /tmp/contributor
  for site in ${SITES:?SITES: diffusers sites to run the suite against}; do
    name=$(basename "$site")
    timed "contributor-$name" bash -c "cd /tmp/contributor && PYTHONPATH='$site' python3 -m pytest -m gpu --nosync \
      --nosync-suite -q -p no:cacheprovider --nosync-report='$out/contributor-$name.json' -k 'not test_step_metrics'"
  done
  cd "$here"
  ;;
*)
  echo "unknown part $part" >&2
  exit 2
  ;;
esac
