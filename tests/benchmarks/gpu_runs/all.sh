#!/bin/bash
# All wave-3 GPU runs, three groups at once (16 cores, one GPU), then one archive in $OUT.
H="$(cd "$(dirname "$0")" && pwd)"
SCENARIOS="lr flag mask crash" bash $H/gen.sh > $OUT/log_a.txt 2>&1 &
SCENARIOS="autotune" bash $H/gen.sh > $OUT/log_b.txt 2>&1 &
SCENARIOS="gpt" bash $H/gen.sh > $OUT/log_c.txt 2>&1 &
wait
cat $OUT/log_*.txt
cd $OUT && tar cJf runs.tar.xz runs && rm -rf runs && ls -la
