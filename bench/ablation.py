#!/usr/bin/env python3
"""Ablation ladder: bench/suite/gemm_f16.tdsl built with the pipeline cut after
each pass of `tdslc --list-passes` (rung 1: the first pass only, ... last
rung: the whole pipeline), each rung timed against cuBLAS by tdsl-bench.

    python3 bench/ablation.py --tdslc build/bin/tdslc --bench build/bin/tdsl-bench
        [--out DIR] [--json ablation.json] [--quick]

New passes appear as new rungs without editing this file."""
import argparse
import os
import subprocess
import sys

from tdsl_py import REPO, Builder


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tdslc", required=True)
    ap.add_argument("--bench", required=True)
    ap.add_argument("--out", default="bench-out/ablation")
    ap.add_argument("--json", default="ablation.json")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    b = Builder(args.tdslc, args.out)
    passes = b.passes()
    source = os.path.join(REPO, "bench", "suite", "gemm_f16.tdsl")
    rungs = []
    for i, p in enumerate(passes):
        name = f"{i + 1}-{'naive-' if i == 0 else '+'}{p}"
        flags = [f"--disable-pass={q}" for q in passes[i + 1:]]
        rungs.append(f"{name}={b.build(source, 'rung' + str(i + 1), flags)}")
        print(f"ablation rung {name}: tdslc {' '.join(flags) or '(full pipeline)'}", flush=True)
    cmd = [args.bench, "--filter", "ablation-only", "--ablation", ",".join(rungs), "--json", args.json]
    if args.quick:
        cmd.append("--quick")
    return subprocess.run(cmd).returncode


if __name__ == "__main__":
    sys.exit(main())
