#!/usr/bin/env bash
# Scaling over GPUs with pytest-xdist, and context parallelism over 2 GPUs (docs/validation.md).
# Usage: scripts/multi-gpu-validation.sh OUT_DIR   (on a machine with 2+ GPUs, from the repo root)
set -uo pipefail
out=${1:?output directory}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
log() { echo "== $*"; }
now() { date +%s.%N; }
since() { python3 -c "print(round($(now) - $1, 1))"; }
nvidia-smi -L
python3 -c "import torch, xdist; print('torch', torch.__version__, 'gpus', torch.cuda.device_count(), 'xdist', xdist.__version__)"

log "target suite on 1 GPU (no xdist), process start to end"
start=$(now)
CUDA_VISIBLE_DEVICES=0 python3 -m pytest -m gpu --nosync -p no:cacheprovider -q pytest_nosync/suite/test_targets.py \
  --nosync-report="$out/suite-1gpu.json" 2>&1 | tail -n 2
log "1 GPU wall $(since "$start")s"

log "target suite on 2 GPUs (-n auto: one worker per GPU, targets grouped)"
start=$(now)
python3 -m pytest -m gpu --nosync -p no:cacheprovider -q -n auto --dist loadgroup pytest_nosync/suite/test_targets.py \
  --nosync-report="$out/suite-2gpu.json" 2>&1 | tail -n 2
log "2 GPU wall $(since "$start")s"

log "everything on 2 GPUs: -n auto, merged report, baseline checked on the controller"
start=$(now)
python3 -m pytest -m gpu --nosync -p no:cacheprovider -q -n auto --dist loadgroup \
  --nosync-report="$out/all-2gpu.json" > "$out/all-2gpu.log" 2>&1
log "rc=$? wall $(since "$start")s"; tail -n 3 "$out/all-2gpu.log"

log "-n 3 on 2 GPUs must be a usage error"
python3 -m pytest -m gpu --nosync -p no:cacheprovider -q -n 3 pytest_nosync/suite/test_targets.py 2>&1 | tail -n 2

log "context parallelism over 2 GPUs (no xdist)"
start=$(now)
python3 -m pytest -m gpu --nosync -p no:cacheprovider -q -rs pytest_nosync/suite/test_distributed.py \
  --nosync-report="$out/context-parallel.json" > "$out/context-parallel.log" 2>&1
log "rc=$? wall $(since "$start")s"; tail -n 25 "$out/context-parallel.log"
