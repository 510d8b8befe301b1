#!/bin/bash
# Real GPU runs for tcview's wave-3 fixtures: each a run dir (trace/, torch_logs.txt, stdout.txt, script.py, command.txt).
# Made on an H100 (torch 2.11.0+cu130, triton 3.6.0) by the device tool: `OUT=$OUT bash tests/benchmarks/gpu_runs/all.sh`;
# each run is kept as tests/fixtures/runs/h100_<name>.tar.xz.
SRC="$(cd "$(dirname "$0")" && pwd)"
mkdir -p /workspace/examples && cp "$SRC"/*.py /workspace/examples/ && cd /workspace/examples
D=${OUT:-/tmp/out}/runs; mkdir -p $D
LOGS="graph_breaks,recompiles,guards,dynamic,perf_hints,cudagraphs"
python3 -c 'import torch,triton;print(torch.__version__,triton.__version__,torch.cuda.get_device_name())' | tee $D/versions.txt
run() { name=$1; shift; mkdir -p $D/$name; cp "$2" $D/$name/script.py
  echo "$*" > $D/$name/command.txt; echo "== $name: $*"; s=$(date +%s)
  ( export TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) TRITON_CACHE_DIR=$(mktemp -d); export TORCH_TRACE=$D/$name/trace; export TORCH_LOGS=${TL:-$LOGS}; timeout ${TO:-240} "$@" ) > $D/$name/stdout.txt 2> $D/$name/torch_logs.txt
  echo "rc=$? $(( $(date +%s)-s ))s $(du -sh $D/$name | cut -f1)"; }
for s in ${SCENARIOS:-lr flag mask crash autotune gpt}; do case $s in
 lr) run lr_float python3 lr_float.py ;;
 flag) run module_flag python3 module_flag.py ;;
 mask) run mask_swap python3 mask_swap.py ;;
 crash) run cudagraph_crash python3 cudagraph_crash.py; run cudagraph_crash_docs python3 cudagraph_crash_docs.py ;;
 autotune) TO=300 run autotune_train python3 autotune_train.py ;;
 gpt) mkdir -p $D/gpt2_profile; run gpt2_profile python3 gpt2_profile.py $D/gpt2_profile
   mkdir -p $D/gpt2_profile_unique; TORCHINDUCTOR_UNIQUE_KERNEL_NAMES=1 run gpt2_profile_unique python3 gpt2_profile.py $D/gpt2_profile_unique ;;
 cgprof) for m in infer train; do mkdir -p $D/cudagraph_profile_$m; run cudagraph_profile_$m python3 cudagraph_profile.py $D/cudagraph_profile_$m $m; done ;;
esac; done
