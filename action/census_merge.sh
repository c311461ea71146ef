#!/usr/bin/env bash
# The merge step of action.yml (input `merge: "true"`), runnable by hand where every shard's files are:
#
#   NOSYNC_SHARDS=shards NOSYNC_OUT=merged bash action/census_merge.sh
#
# 1. `census merge` of the shard reports found under NOSYNC_SHARDS (nosync-shard-K-of-N.json, at any depth: one
#    folder per downloaded artifact) with their baseline writes beside them: census.json, baseline.json (the known
#    issues one unsharded run writes: the next NOSYNC_BASELINE) and durations.json (the next shard plan's, updated
#    from NOSYNC_DURATIONS where given) in NOSYNC_OUT. A shard missing or twice, of another plan, selection or
#    checkout: its one sentence, exit 4, nothing written.
# 2. the Markdown summary (what the baseline does not know, then `census table`) on stdout, in summary.md and in
#    $GITHUB_STEP_SUMMARY; the heat map, census-map.png, where matplotlib is installed.
# Exit status: 1 when the merged census has anything new against the baseline the shards were judged by (a finding
# no entry accepts: a sync, growth, a raise, a check that could not run), else 0.
set -euo pipefail
shards=${NOSYNC_SHARDS:?NOSYNC_SHARDS: the directory of the shard reports}
python=${NOSYNC_PYTHON:-python}
out=${NOSYNC_OUT:-$(mktemp -d)}
mkdir -p "$out"
reports=() baselines=()
while IFS= read -r report; do
  reports+=("$report")
  baselines+=("$(dirname "$report")/$(basename "$report" | sed 's/^nosync-shard-/nosync-baseline-/')")
done < <(find "$shards" -name 'nosync-shard-*-of-*.json' 2>/dev/null | sort)
if [ "${#reports[@]}" -eq 0 ]; then
  echo "nosync: no shard report (nosync-shard-K-of-N.json) under $shards: a census merges every shard's report" >&2
  exit 4
fi
for written in "${baselines[@]}"; do
  if [ ! -f "$written" ]; then
    echo "nosync: $written is missing: every shard's report is merged with the baseline its run wrote beside it" >&2
    exit 4
  fi
done
# the next plan's durations: the earlier file's, updated with every shard's seconds
if [ -n "${NOSYNC_DURATIONS:-}" ] && [ -f "$NOSYNC_DURATIONS" ]; then cp "$NOSYNC_DURATIONS" "$out/durations.json"; fi
"$python" -m pytest_nosync census merge "${reports[@]}" --out "$out/census.json" \
  --baselines "${baselines[@]}" --baseline-out "$out/baseline.json" --durations "$out/durations.json"

# what the baseline does not know: the findings a judged run fails on (a writing shard recorded them instead)
set +e
"$python" -m pytest_nosync census new "$out/census.json" > "$out/summary.md"
verdict=$?
set -e
"$python" -m pytest_nosync census table "$out/census.json" --title "Census" >> "$out/summary.md"
if "$python" -c "import matplotlib" 2>/dev/null; then
  # a picture that cannot be drawn says why and leaves the verdict and the summary as they are
  "$python" -m pytest_nosync census plot "$out/census.json" --out "$out/census-map.png" || echo "nosync: no heat map"
else
  echo "nosync: no heat map (census plot needs matplotlib)"
fi
cat "$out/summary.md"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then cat "$out/summary.md" >> "$GITHUB_STEP_SUMMARY"; fi
exit "$verdict"
