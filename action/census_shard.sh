#!/usr/bin/env bash
# One shard of the census, the matrix job's step of action.yml (input `shard`), runnable by hand from a diffusers
# checkout:
#
#   NOSYNC_SHARD=2/4 NOSYNC_OUT=shards bash action/census_shard.sh
#
# Runs the K-th of N shards (--nosync-shard=K/N: whole test modules, packed by NOSYNC_DURATIONS where given) and
# writes, in NOSYNC_OUT, nosync-shard-K-of-N.json (its report) and nosync-baseline-K-of-N.json (its baseline write).
# Judged by NOSYNC_BASELINE where given: a finding the baseline knows is `known` in the report, any other `fail`. The
# run writes a baseline, so it records its failures rather than failing on them: the merge step (census_merge.sh)
# judges the whole census. Exit status: pytest's, 0 where the shard's modules hold no test (exit 5).
set -euo pipefail
shard=${NOSYNC_SHARD:?NOSYNC_SHARD: the shard to run, K/N (e.g. 2/4)}
paths=${NOSYNC_PATHS:-tests/pipelines}
workers=${NOSYNC_WORKERS:-}
python=${NOSYNC_PYTHON:-python}
out=${NOSYNC_OUT:-$(mktemp -d)}
mkdir -p "$out"
name="${shard%/*}-of-${shard#*/}"
# shellcheck disable=SC2206  # the workers' arguments are words
extra=($workers)
judged=()
[ -n "${NOSYNC_BASELINE:-}" ] && judged=(--nosync-baseline="$NOSYNC_BASELINE")
durations=()
[ -n "${NOSYNC_DURATIONS:-}" ] && durations=(--nosync-durations="$NOSYNC_DURATIONS")

echo "nosync: shard $shard of the census of $paths"
set +e
PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}" "$python" -m pytest "$paths" -m gpu --nosync -q --nosync-trace=never \
  -p no:cacheprovider ${extra[@]+"${extra[@]}"} --nosync-shard="$shard" ${durations[@]+"${durations[@]}"} \
  ${judged[@]+"${judged[@]}"} --nosync-baseline-write="$out/nosync-baseline-$name.json" \
  --nosync-report="$out/nosync-shard-$name.json"
status=$?
set -e
if [ "$status" -eq 5 ]; then status=0; fi  # no test in this shard's modules: its report is an empty part
exit "$status"
