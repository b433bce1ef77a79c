#!/usr/bin/env bash
# The GPU check: one table in under 8 minutes on a CUDA machine (DELTR full batch at 10^7 rows,
# a 100-step bf16 LaKDA run, 2-GPU DDP when present). Run from the repository root, with fairltr
# installed (README's install command). Results also go to ${OUT:-outputs}/device_check.json.
set -euo pipefail
cd "$(dirname "$0")/.."
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false MLFLOW_DISABLE_TELEMETRY=true
PY="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}"
out="${OUT:-outputs}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "(nvidia-smi not found)"
timeout 480 "$PY" benchmarks/device_check.py --json "$out/device_check.json" "$@"
