#!/usr/bin/env python3
"""Ablation ladder: bench/suite/gemm_f32.tdsl (or gemm_f16 with --type f16)
built once per rung and timed against cuBLAS by tdsl-bench. Rung 1 is -O0
(map-to-gpu alone: one thread per output); each next rung turns on the next
pass of `tdslc --list-passes`, so each pass's gain is the step between two
rungs. New passes appear as new rungs without editing this file.

    python3 bench/ablation.py --tdslc build/bin/tdslc --bench build/bin/tdsl-bench
        [--out DIR] [--json ablation.json] [--quick] [--type f32|f16]
        [--variant NAME='--schedule=k_tile=16 ...']... [--ladder tensor-cores]

With --variant, the rungs are the named variants instead (tdslc flags each,
on the full pipeline): how a schedule is compared on the GPU. --ladder
tensor-cores is the f16 GEMM's tensor-core ladder, one knob per rung: CUDA
cores, mma.sync from shared memory, + ldmatrix, + cp.async stages, +
swizzle, + grouped block order (the default)."""
import argparse
import os
import shlex
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))
import tdsl  # noqa: E402


S = "--schedule="
TENSOR_CORE_LADDER = [
    f"1-cuda-cores={S}tensor_cores=off",
    f"2-mma-from-shared={S}ldmatrix=off {S}stages=1 {S}swizzle=off {S}block_order=rows",
    f"3-+ldmatrix={S}stages=1 {S}swizzle=off {S}block_order=rows",
    f"4-+cp.async-stages={S}swizzle=off {S}block_order=rows {S}copy_engine=off",
    f"5-+swizzle={S}block_order=rows {S}copy_engine=off",
    f"6-+block-order={S}copy_engine=off",
    "7-+copy-engine=",
]


def build(source, flags, out_dir):
    """The shared library of SOURCE under tdslc FLAGS (a rung), through the
    tdsl package: -O and --schedule become its opt and schedule."""
    opt, schedule, rest = 2, [], []
    for f in flags:
        if f.startswith("-O"):
            opt = int(f[2:])
        elif f.startswith("--schedule="):
            schedule.append(f[len("--schedule="):])
        else:
            rest.append(f)
    return tdsl.compile(source, arch="sm_90", opt=opt, schedule=schedule, flags=rest,
                        cache_dir=out_dir).library


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tdslc", required=True)
    ap.add_argument("--bench", required=True)
    ap.add_argument("--out", default="bench-out/ablation")
    ap.add_argument("--json", default="ablation.json")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--type", default="f32", choices=["f32", "f16"])
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--ladder", choices=["tensor-cores"])
    args = ap.parse_args()
    if args.ladder == "tensor-cores":
        args.type = "f16"
        args.variant = TENSOR_CORE_LADDER + args.variant
    os.environ["TDSL_TDSLC"] = args.tdslc
    source = os.path.join(REPO, "bench", "suite", f"gemm_{args.type}.tdsl")
    plan = []
    if args.variant:
        for v in args.variant:
            name, _, flags = v.partition("=")
            plan.append((name, shlex.split(flags)))
    else:
        listed = subprocess.run([args.tdslc, "--list-passes"], capture_output=True, text=True,
                                check=True).stdout
        passes = [line.split()[0] for line in listed.splitlines() if line.strip()]
        plan.append(("1-naive", ["-O0"]))
        on = ["map-to-gpu"]
        for p in passes:
            if p == "map-to-gpu":
                continue
            on.append(p)
            plan.append((f"{len(plan) + 1}-+{p}", [f"--disable-pass={q}" for q in passes if q not in on]))
    rungs = []
    for i, (name, flags) in enumerate(plan):
        rungs.append(f"{name}={build(source, flags, args.out)}")
        print(f"ablation {name}: tdslc {' '.join(flags) or '(full pipeline)'}", flush=True)
    cmd = [args.bench, "--filter", "ablation-only", "--ablation", ",".join(rungs),
           "--ablation-type", args.type, "--json", args.json]
    if args.quick:
        cmd.append("--quick")
    return subprocess.run(cmd).returncode


if __name__ == "__main__":
    sys.exit(main())
