#!/usr/bin/env bash
# The one command: checks and times the whole suite (C++ vs cuBLAS / copy),
# the ablation ladders (the f32 GEMM's passes, the f16 GEMM's tensor-core
# knobs), the Python peers (where torch exists) and draws the
# plots. Usage: bench/run.sh BUILD_DIR OUT_DIR   (BUILD_DIR holds bin/tdslc
# and bin/tdsl-bench, built with `ninja -C BUILD_DIR tdsl-bench`).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:?build dir}" out="${2:?out dir}"
work="${BENCH_WORK:-$out/work}"
mkdir -p "$out" "$work"
export PYTHONUNBUFFERED=1
"$build/bin/tdsl-bench" --json "$out/bench.json" | tee "$out/log.md"; rc=${PIPESTATUS[0]}
python3 "$here/ablation.py" --tdslc "$build/bin/tdslc" --bench "$build/bin/tdsl-bench" \
  --out "$work/ablation" --json "$out/ablation.json" | tee -a "$out/log.md"
python3 "$here/ablation.py" --tdslc "$build/bin/tdslc" --bench "$build/bin/tdsl-bench" \
  --ladder tensor-cores --out "$work/ablation-f16" --json "$out/ablation-f16.json" | tee -a "$out/log.md"
python3 "$here/peers.py" --tdslc "$build/bin/tdslc" --out "$work/peers" --json "$out/peers.json" | tee -a "$out/log.md"
python3 "$here/plot.py" "$out/bench.json" "$out/ablation.json" "$out/ablation-f16.json" --out "$out"
exit $rc
