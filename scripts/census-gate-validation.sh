#!/usr/bin/env bash
# The census as a gate (docs/validation.md section 18), on a machine with diffusers checkouts: for each checkout, a
# run that writes the known-issues baseline, then a run judged by the file it wrote (both should exit 0); with
# --planted, a pull request that adds a sync to a pipeline outside the built-in targets, through the action's script.
#
#   scripts/census-gate-validation.sh OUT_DIR write-and-judge CHECKOUT [NAME]
#   scripts/census-gate-validation.sh OUT_DIR judge CHECKOUT NAME KNOWN.json
#   scripts/census-gate-validation.sh OUT_DIR planted CHECKOUT   (CHECKOUT: a git repository; a branch is made there,
#                                                                 the merge base's known issues land in planted/)
#
# CENSUS_ARGS: the workers' arguments (default: twelve workers sharing one GPU under MPS). Needs pytest-nosync,
# pytest-xdist and diffusers' test dependencies importable (docs/census/README.md).
set -uo pipefail
out=${1:?output directory}
part=${2:?part: write-and-judge or planted}
checkout=$(cd "${3:?a diffusers checkout}" && pwd)
name=${4:-$(basename "$checkout")}
mkdir -p "$out"
out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
read -r -a workers <<< "${CENSUS_ARGS:--n 12 --nosync-share-gpus --dist loadgroup}"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
now() { date +%s.%N; }
since() { python3 -c "print(round($(now) - $1, 1))"; }

census() {  # census LABEL ARGS...: one run over the checkout's tester classes, its wall time and exit status
  local label=$1; shift
  local start; start=$(now)
  (cd "$checkout" && PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}" python3 -m pytest tests/pipelines -m gpu --nosync \
    "${workers[@]}" -p no:cacheprovider -q --nosync-trace=never -rs "$@") > "$out/$label.log" 2>&1
  local status=$?
  echo "$label: exit $status, $(since "$start") s process start to end"
  grep -E "^nosync: [0-9]+ (of|findings|test module)|checks reached|passed|failed" "$out/$label.log" | tail -n 6
}

case "$part" in
  write-and-judge)
    census "$name-write" --nosync-baseline-write="$out/$name-known.json" --nosync-report="$out/$name-write.json"
    census "$name-judged" --nosync-baseline="$out/$name-known.json" --nosync-report="$out/$name-judged.json"
    ;;
  judge)
    known=$(cd "$(dirname "${5:?the baseline to judge by}")" && pwd)/$(basename "$5")
    census "$name-judged" --nosync-baseline="$known" --nosync-report="$out/$name-judged.json"
    ;;
  planted)
    # CogView4's loop reads its timestep on the host in every step: a sync outside the six targets' code
    file=src/diffusers/pipelines/cogview4/pipeline_cogview4.py
    anchor='                timestep = t.expand(latents.shape[0])'
    cd "$checkout"
    grep -qF "$anchor" "$file" || { echo "planted: '$anchor' is not in $file"; exit 2; }
    git switch -q -c nosync-planted
    python3 - "$file" "$anchor" <<'EOF'
import sys
path, anchor = sys.argv[1], sys.argv[2]
text = open(path).read()
planted = anchor + "\n                planted = float(t)  # nosync: a sync planted by the validation\n"
open(path, "w").write(text.replace(anchor + "\n", planted, 1))
EOF
    git -c user.name=v -c user.email=v@v commit -qam "a planted sync in CogView4's loop"
    start=$(now)
    NOSYNC_BASE=HEAD~1 NOSYNC_OUT="$out/planted" NOSYNC_WORKERS="${workers[*]}" NOSYNC_PYTHON=python3 \
      bash "$here/action/census_pr.sh" > "$out/planted.log" 2>&1
    echo "planted: exit $?, $(since "$start") s (the merge base's whole census, then the change's classes)"
    grep -E "^nosync: |checks reached|passed|failed|planted" "$out/planted.log" | tail -n 12
    cat "$out/planted/summary.md"
    git switch -q -
    ;;
  *) echo "unknown part $part"; exit 2 ;;
esac
