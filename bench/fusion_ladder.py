#!/usr/bin/env python3
"""The fusion stage's ablation ladder: each suite kernel that a fusion rule
changes, compiled once per rung and timed on torch tensors through the tdsl
package. Rung 1 is `fuse = off` (every statement its own launch); each next
rung turns on the next rule, so each rule's gain is the step between two
rungs. Every rung's output is checked against the last rung's (the default
pipeline), within the dtype's tolerance: fusion may reorder a rounding, no
more.

    python3 bench/fusion_ladder.py --tdslc build/bin/tdslc [--out DIR]
        [--json fusion-ladder.json] [--quick] [--only K1,K2]

Needs torch and a GPU; without them it says so and exits 0."""
import argparse
import json
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "bench"))

RUNGS = [
    ("1-fuse=off", ["fuse=off"]),
    ("2-+inline", ["fuse_epilogue=off", "fuse_factor=off", "fuse_prologue=off", "fuse_siblings=off",
                   "fuse_rows=off", "fuse_beside=off"]),
    ("3-+epilogue", ["fuse_factor=off", "fuse_prologue=off", "fuse_siblings=off", "fuse_rows=off",
                     "fuse_beside=off"]),
    ("4-+factor", ["fuse_prologue=off", "fuse_siblings=off", "fuse_rows=off", "fuse_beside=off"]),
    ("5-+prologue", ["fuse_siblings=off", "fuse_rows=off", "fuse_beside=off"]),
    ("6-+siblings", ["fuse_rows=off", "fuse_beside=off"]),
    ("7-+rows", ["fuse_beside=off"]),
    ("8-+beside", []),
]


def cases(torch, quick):
    """(kernel, shape, tensors, output, tolerance) of each kernel a rule
    changes: the row chains, the GEMM epilogue, the scaled GEMM, the
    int8-weight GEMM, the gated MLP."""
    dev = "cuda"
    r = lambda *s, dt=torch.float16: (torch.rand(*s, device=dev) * 2 - 1).to(dt)
    R, C = (257, 300) if quick else (8192, 8192)
    n = 256 if quick else 4096
    T, D, F = (256, 256, 384) if quick else (4096, 4096, 11008)
    f32 = torch.float32
    yield "softmax", f"{R}x{C}", [r(R, C)], r(R, C), 1e-3
    yield "layernorm", f"{R}x{C}", [r(R, C), r(C, dt=f32), r(C, dt=f32)], r(R, C), 1e-2
    yield "rmsnorm", f"{R}x{C}", [r(R, C), r(C)], r(R, C), 1e-2
    lab = torch.randint(0, C, (R,), device=dev, dtype=torch.int32)
    yield "cross_entropy", f"{R}x{C}", [r(R, C), lab], torch.empty(R, device=dev), 1e-3
    yield "gemm_bias_relu", f"{n}^3", [r(n, n), r(n, n), r(n, dt=f32)], r(n, n), 1e-2
    yield "gemm_scaled", f"{n}^3", [r(n, n), r(n, n), 0.5], r(n, n), 1e-2
    Wq = torch.randint(-127, 128, (n, n), device=dev, dtype=torch.int8)
    yield "gemm_dequant", f"{n}^3", [r(n, n), Wq, (torch.rand(n, device=dev) / 64).half()], r(n, n), 1e-2
    yield "gated_mlp", f"{T}x{D}x{F}", [r(T, D), r(D, F) / 8, r(D, F) / 8], r(T, F), 1e-2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tdslc", required=True)
    ap.add_argument("--out", default="bench-out/fusion-ladder")
    ap.add_argument("--json", default="fusion-ladder.json")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--budget-s", type=float, default=4.0)
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("fusion_ladder: torch is not installed; nothing measured")
        return 0
    if not torch.cuda.is_available():
        print("fusion_ladder: no CUDA device; nothing measured")
        return 0
    import tdsl
    from peers import median_ms
    os.environ["TDSL_TDSLC"] = args.tdslc
    only = set(filter(None, args.only.split(",")))
    rows = []
    for kernel, shape, inputs, out, tol in cases(torch, args.quick):
        if only and kernel not in only:
            continue
        src = os.path.join(REPO, "bench", "suite", kernel + ".tdsl")
        outs = {}
        for rung, schedule in RUNGS:
            mod = tdsl.compile(src, schedule=schedule, cache_dir=args.out)
            fn = lambda mod=mod, o=out: mod[kernel](*inputs, out=o)
            out.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            outs[rung] = out.clone()
            ms = median_ms(fn, args.budget_s)
            # Launches, not kernels: a versioned launch is two kernels.
            launches = len(re.findall(r"^// Launch \d+ of ", mod.source, re.M))
            rows.append({"kernel": kernel, "shape": shape, "rung": rung, "ms": ms,
                         "launches": launches})
        ref = outs[RUNGS[-1][0]].double()
        for row in rows[-len(RUNGS):]:
            got = outs[row["rung"]].double()
            err = ((got - ref).abs() / (ref.abs() + ref.abs().mean())).max().item()
            row["err_vs_default"] = err
            row["status"] = "ok" if err <= tol else f"FAIL: {err:.3g} > {tol}"
        del outs
        first = rows[-len(RUNGS)]["ms"]
        for row in rows[-len(RUNGS):]:
            step = row["ms"] and first and first / row["ms"]
            print(f"{kernel:15s} {shape:16s} {row['rung']:12s} {row['ms'] or float('nan'):9.4f} ms "
                  f"{step or float('nan'):6.2f}x of fuse=off  {row['launches']} launches  "
                  f"{row['status']}", flush=True)
    with open(args.json, "w") as f:
        json.dump({"rows": rows}, f, indent=1)
    return 1 if any(r["status"] != "ok" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
