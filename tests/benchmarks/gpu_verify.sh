#!/bin/bash
# On the device machine, from the repo root: the wheels in .whl/ (see gpu_verify.py's
# docstring for the download command) into /tmp/site, then the verification; its log and
# results go to $OUT. One command, under 8 minutes.
set -o pipefail
export PYTHONUNBUFFERED=1 OUT="${OUT:-$PWD/bench_out}"
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 3
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -4
timeout 470 python3 tests/benchmarks/gpu_verify.py "$@"
