#!/usr/bin/env bash
# The census gate of action.yml, runnable by hand from a diffusers checkout (what the action runs):
#
#   NOSYNC_BASE=origin/main bash action/census_pr.sh
#
# 1. the merge base, in a worktree of its own: the whole census, recording each tester's code (for
#    --nosync-changed) in a cache both runs share, and writing the known-issues baseline (a writing run exits 0
#    when every failure it saw is an entry of the file);
# 2. HEAD: the tester classes the change touches (NOSYNC_CHANGED=true) or all, judged by that baseline;
# 3. `python -m pytest_nosync census diff` of the two reports: Markdown on stdout, in $GITHUB_STEP_SUMMARY and the
#    step's `summary` output.
# Exit status: the HEAD run's, else the diff's (1 when anything got worse). Files land in NOSYNC_OUT (a new temporary
# directory by default): base.json, head.json, base-known.json, summary.md. NOSYNC_DURATIONS (a file kept between
# runs, e.g. in the CI's cache): both runs order xdist's workers longest first by it and record their seconds there.
set -euo pipefail
base_ref=${NOSYNC_BASE:-origin/main}
paths=${NOSYNC_PATHS:-tests/pipelines}
workers=${NOSYNC_WORKERS:-}
python=${NOSYNC_PYTHON:-python}
out=${NOSYNC_OUT:-$(mktemp -d)}
mkdir -p "$out"
base=$(git merge-base "$base_ref" HEAD)
worktree="$out/base-checkout"
git worktree add -q --detach "$worktree" "$base"
trap 'git worktree remove --force "$worktree" >/dev/null 2>&1 || true' EXIT
common=(-m gpu --nosync -q --nosync-trace=never -o "cache_dir=$out/cache")
# shellcheck disable=SC2206  # the workers' arguments are words
extra=($workers)
if [ -n "${NOSYNC_DURATIONS:-}" ]; then  # absolute: the merge base's census runs in its worktree
  extra+=(--nosync-durations="$(cd "$(dirname "$NOSYNC_DURATIONS")" && pwd)/$(basename "$NOSYNC_DURATIONS")")
fi

echo "nosync: the census of the merge base ${base:0:10} (writes the known issues)"
(cd "$worktree" && PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}" "$python" -m pytest "$paths" "${common[@]}" \
  ${extra[@]+"${extra[@]}"} --nosync-baseline-write="$out/base-known.json" --nosync-report="$out/base.json")

echo "nosync: the census of HEAD, judged by the merge base's known issues"
changed=()
[ "${NOSYNC_CHANGED:-true}" = true ] && changed=(--nosync-changed="$base")
set +e
PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}" "$python" -m pytest "$paths" "${common[@]}" ${extra[@]+"${extra[@]}"} \
  ${changed[@]+"${changed[@]}"} --nosync-baseline="$out/base-known.json" --nosync-report="$out/head.json"
head_status=$?
if [ "$head_status" -eq 5 ]; then  # the change touches no tester class: nothing ran, nothing got worse
  echo "## nosync census: ${base:0:10} → HEAD"$'\n\n'"The change touches no pipeline tester class's code." > "$out/summary.md"
  head_status=0 diff_status=0
else
  "$python" -m pytest_nosync census diff "$out/base.json" "$out/head.json" --title "nosync census: ${base:0:10} → HEAD" \
    > "$out/summary.md"
  diff_status=$?
fi
set -e
cat "$out/summary.md"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then cat "$out/summary.md" >> "$GITHUB_STEP_SUMMARY"; fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  { echo "summary<<NOSYNC_EOF"; cat "$out/summary.md"; echo "NOSYNC_EOF"; } >> "$GITHUB_OUTPUT"
fi
if [ "$head_status" -ne 0 ]; then exit "$head_status"; fi
exit "$diff_status"
