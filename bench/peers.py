#!/usr/bin/env python3
"""Python-only peers (torch eager, torch.compile, Triton, SDPA) next to the
tdslc kernels, on the same torch tensors; adds columns to tdsl-bench's table.

    python3 bench/peers.py --tdslc build/bin/tdslc [--bench-json bench.json]
        [--json peers.json] [--out DIR] [--budget-s 4] [--quick] [--only K1,K2]

The tdslc kernels are compiled from bench/suite/*.tdsl by the tdsl package
(python/tdsl, cached under --out) and called on the torch tensors, on
torch's current stream.
Without torch (or without a GPU) it says so plainly and exits 0 having
measured nothing: the C++ table stands alone."""
import argparse
import json
import math
import os
import statistics
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))
import tdsl  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def median_ms(fn, budget_s, target_s=0.5):
    """Median time of one launch, from CUDA events around back-to-back
    launches (as many as fill about a millisecond), so that the host's cost
    of a call (a Python call, torch's dispatch) overlaps the GPU's work as
    it does in a program; None if one launch takes over budget_s (then it
    is not repeated)."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    s.record(); fn(); e.record(); torch.cuda.synchronize()
    first = s.elapsed_time(e)
    if first > budget_s * 1e3:
        return None
    batch = max(1, min(100, int(1.0 / max(first, 1e-3))))
    iters = int(min(200, max(3, target_s * 1e3 / max(first * batch, 1e-3))))
    times = []
    for _ in range(iters):
        s.record()
        for _ in range(batch):
            fn()
        e.record(); e.synchronize()
        times.append(s.elapsed_time(e) / batch)
    return statistics.median(times)


def triton_matmul():
    """A plain Triton GEMM (one fixed 128x128x64 tile config, not autotuned)."""
    import triton
    import triton.language as tl

    @triton.jit
    def kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pm, pn = tl.program_id(0), tl.program_id(1)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            x = tl.load(a + rm[:, None] * K + (k0 + rk)[None, :],
                        mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
            y = tl.load(b + (k0 + rk)[:, None] * N + rn[None, :],
                        mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc += tl.dot(x, y)
        tl.store(c + rm[:, None] * N + rn[None, :], acc.to(c.dtype.element_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))

    def run(A, B, C):
        M, K = A.shape
        N = B.shape[1]
        kernel[(triton.cdiv(M, 128), triton.cdiv(N, 128))](A, B, C, M, N, K, BM=128, BN=128,
                                                           BK=64, num_warps=8, num_stages=3)
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tdslc", required=True)
    ap.add_argument("--json", default="peers.json")
    ap.add_argument("--out", default="bench-out/peers")
    ap.add_argument("--budget-s", type=float, default=4.0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="",
                    help="comma-separated kernels to measure (default: all)")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    if torch is None:
        print("peers.py: torch is not installed here: the torch eager, torch.compile, Triton "
              "and SDPA columns are skipped (nothing measured)")
        return 0
    if not torch.cuda.is_available():
        print("peers.py: torch sees no CUDA device: the Python peer columns are skipped")
        return 0
    os.environ["TDSL_TDSLC"] = args.tdslc
    mods = {}

    def tdsl_kernel(kernel):
        """bench/suite/KERNEL.tdsl's kernel, compiled for this GPU once."""
        if kernel not in mods:
            src = os.path.join(REPO, "bench", "suite", kernel + ".tdsl")
            mods[kernel] = tdsl.compile(src, cache_dir=args.out)
        return mods[kernel][kernel]

    dev = "cuda"
    r = lambda *s, dt=torch.float16: (torch.rand(*s, device=dev, dtype=torch.float32) * 2 - 1).to(dt)
    rows = []
    n = 256 if args.quick else 4096
    R = 257 if args.quick else 8192
    compiled = {}

    def tc(name, f):
        if name not in compiled:
            compiled[name] = torch.compile(f)
        return compiled[name]

    def measure(kernel, shape, dtype, flops, nbytes, tdsl_fn, peers, ref_out, tdsl_out, tol):
        if only and kernel not in only:
            return
        row = {"kernel": kernel, "shape": shape, "dtype": dtype, "flops": flops, "bytes": nbytes,
               "peers": {}}
        tdsl_out.fill_(float("nan"))
        try:
            tdsl_fn()
            torch.cuda.synchronize()
            ref = ref_out.double()
            # Differences within f16's subnormal spacing are rounding, not error.
            slack = 2.0 ** -24 if tdsl_out.dtype == torch.float16 else 0.0
            diff = ((tdsl_out.double() - ref).abs() - slack).clamp(min=0)
            err = (diff / (ref.abs() + ref.abs().mean())).max().item()
            row["max_err"] = err
            ok = err <= tol  # NaN fails
            row["tdsl_ms"] = median_ms(tdsl_fn, args.budget_s) if ok else None
            row["status"] = "ok" if ok else f"FAIL: error {err:.3g} > {tol}"
            if ok and row["tdsl_ms"] is None:
                row["status"] = "skipped: naive kernel over time budget"
        except Exception as ex:  # one kernel failing must not hide the others
            row["status"] = f"FAIL: {ex}"
        for name, fn in peers.items():
            try:
                row["peers"][name] = median_ms(fn, args.budget_s)
            except Exception as ex:
                row["peers"][name] = None
                row["peers_error"] = row.get("peers_error", "") + f"{name}: {type(ex).__name__}; "
        print(f"  {kernel} {shape} {dtype}: {row.get('status')}", flush=True)
        rows.append(row)

    for dt, name in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
        A, B, C = r(n, n, dt=dt), r(n, n, dt=dt), torch.empty(n, n, device=dev, dtype=dt)
        mm = lambda A=A, B=B: torch.matmul(A, B)
        ref = torch.matmul(A.float(), B.float())
        peers = {"torch": mm, "torch.compile": tc("mm" + name, lambda A=A, B=B: A @ B)}
        try:
            tm = triton_matmul()
            Ct = torch.empty_like(C)
            peers["triton"] = lambda: tm(A, B, Ct)
        except Exception as ex:
            print(f"  triton unavailable: {ex}")
        measure("gemm", f"{n}x{n}x{n}", name, 2.0 * n ** 3, 3 * A.nbytes,
                lambda: tdsl_kernel("gemm_" + name)(A, B, out=C), peers, ref, C, 1e-2 if name == "f16" else 1.6e-2)
    A, B, bias = r(n, n), r(n, n), r(n, dt=torch.float32)
    C = torch.empty(n, n, device=dev, dtype=torch.float16)
    ref = torch.relu(A.float() @ B.float() + bias)
    measure("gemm_bias_relu", f"{n}x{n}x{n}", "f16", 2.0 * n ** 3, 3 * A.nbytes,
            lambda: tdsl_kernel("gemm_bias_relu")(A, B, bias, out=C),
            {"torch": lambda: torch.relu(A @ B + bias.half()),
             "torch.compile": tc("gbr", lambda: torch.relu(A @ B + bias.half()))}, ref, C, 1e-2)
    # The factor inside the product, pulled out of the sum by the fusion
    # stage: as fast as the plain GEMM, if the rule works.
    alpha = 0.5
    ref = alpha * (A.float() @ B.float())
    measure("gemm_scaled", f"{n}x{n}x{n}", "f16", 2.0 * n ** 3, 3 * A.nbytes,
            lambda: tdsl_kernel("gemm_scaled")(A, B, alpha, out=C),
            {"torch": lambda: alpha * (A @ B),
             "torch.compile": tc("gsc", lambda: alpha * (A @ B))}, ref, C, 1e-2)
    # Weight-only int8: the scale leaves the sum (factor rule) and f16(Wq)
    # is computed first (prologue rule), so the product is an f16 GEMM.
    Wq = torch.randint(-127, 128, (n, n), device=dev, dtype=torch.int8)
    sc = (torch.rand(n, device=dev) / 64).half()
    ref = (A.float() @ Wq.float()) * sc.float()
    deq = lambda: (A @ Wq.half()) * sc
    measure("gemm_dequant", f"{n}x{n}x{n}", "f16 x i8", 2.0 * n ** 3, A.nbytes + Wq.nbytes + C.nbytes,
            lambda: tdsl_kernel("gemm_dequant")(A, Wq, sc, out=C),
            {"torch": deq, "torch.compile": tc("deq", deq)}, ref, C, 1e-2)
    # A Llama-style gated MLP: two GEMMs over the same X, then silu(g) * u.
    T, D, Fd = (256, 256, 384) if args.quick else (4096, 4096, 11008)
    X, Wg, Wu = r(T, D), r(D, Fd) / 8, r(D, Fd) / 8
    Y = torch.empty(T, Fd, device=dev, dtype=torch.float16)
    mlp = lambda: torch.nn.functional.silu(X @ Wg) * (X @ Wu)
    g = X.float() @ Wg.float()
    measure("gated_mlp", f"{T}x{D}x{Fd}", "f16", 4.0 * T * D * Fd, X.nbytes + 2 * Wg.nbytes + Y.nbytes,
            lambda: tdsl_kernel("gated_mlp")(X, Wg, Wu, out=Y),
            {"torch": mlp, "torch.compile": tc("mlp", mlp)},
            torch.nn.functional.silu(g) * (X.float() @ Wu.float()), Y, 1e-2)
    del g
    # The row-wise chains at the square shape and at long (a 32000-word
    # vocabulary, 131072) and short (64) rows.
    F = torch.nn.functional
    row_shapes = [(257, 300)] if args.quick else [(8192, 8192), (2048, 32000), (128, 131072),
                                                  (262144, 64)]
    for Rr, Cc in row_shapes:
        shape = f"{Rr}x{Cc}"
        X = r(Rr, Cc)
        Y = torch.empty_like(X)
        measure("softmax", shape, "f16", 4.0 * X.numel(), 2 * X.nbytes,
                lambda X=X, Y=Y: tdsl_kernel("softmax")(X, out=Y),
                {"torch": lambda X=X: torch.softmax(X, -1),
                 "torch.compile": tc("sm" + shape, lambda X=X: torch.softmax(X, -1))},
                torch.softmax(X.double(), -1), Y, 1e-3)
        g, be = r(Cc, dt=torch.float32), r(Cc, dt=torch.float32)
        ln = lambda X=X, g=g, be=be, Cc=Cc: F.layer_norm(X.float(), (Cc,), g, be, 1e-5).half()
        measure("layernorm", shape, "f16", 8.0 * X.numel(), 2 * X.nbytes,
                lambda X=X, g=g, be=be, Y=Y: tdsl_kernel("layernorm")(X, g, be, out=Y),
                {"torch": ln, "torch.compile": tc("ln" + shape, ln)},
                F.layer_norm(X.double(), (Cc,), g.double(), be.double(), 1e-5), Y, 1e-2)
        w = r(Cc)
        rms = lambda X=X, w=w, Cc=Cc: F.rms_norm(X, (Cc,), w, 1e-6)
        measure("rmsnorm", shape, "f16", 4.0 * X.numel(), 2 * X.nbytes,
                lambda X=X, w=w, Y=Y: tdsl_kernel("rmsnorm")(X, w, out=Y),
                {"torch": rms, "torch.compile": tc("rms" + shape, rms)},
                F.rms_norm(X.double(), (Cc,), w.double(), 1e-6), Y, 1e-2)
        lab = torch.randint(0, Cc, (Rr,), device=dev, dtype=torch.int32)
        lab64 = lab.long()
        loss = torch.empty(Rr, device=dev, dtype=torch.float32)
        xe = lambda X=X, lab64=lab64: F.cross_entropy(X, lab64, reduction="none")
        measure("cross_entropy", shape, "f16", 4.0 * X.numel(), X.nbytes,
                lambda X=X, lab=lab, loss=loss: tdsl_kernel("cross_entropy")(X, lab, out=loss),
                {"torch": xe, "torch.compile": tc("xe" + shape, xe)},
                F.cross_entropy(X.double(), lab64, reduction="none"), loss, 1e-4 * max(1.0, math.log(Cc)))
        del X, Y
        torch.cuda.empty_cache()
    Xf = r(R, R, dt=torch.float32)
    Ys = torch.empty(R, device=dev)
    measure("rowsum", f"{R}x{R}", "f32", float(Xf.numel()), Xf.nbytes,
            lambda: tdsl_kernel("rowsum")(Xf, out=Ys),
            {"torch": lambda: Xf.sum(-1), "torch.compile": tc("rs", lambda: Xf.sum(-1))},
            Xf.double().sum(-1), Ys, 1e-5 * max(1, R / 256))
    Yt = torch.empty_like(Xf)
    measure("transpose", f"{R}x{R}", "f32", 0.0, 2 * Xf.nbytes,
            lambda: tdsl_kernel("transpose")(Xf, out=Yt),
            {"torch": lambda: Xf.t().contiguous(),
             "torch.compile": tc("tr", lambda: Xf.t().contiguous())}, Xf.t(), Yt, 0)
    av, bv = r(R, dt=torch.float32), r(R, dt=torch.float32)
    ew = lambda: torch.relu(av * Xf + bv) * 0.75
    measure("elementwise", f"{R}x{R}", "f32", 3.0 * Xf.numel(), 2 * Xf.nbytes,
            lambda: tdsl_kernel("elementwise")(Xf, av, bv, 0.75, out=Yt),
            {"torch": ew, "torch.compile": tc("ew", ew)},
            torch.relu(av.double() * Xf.double() + bv.double()) * 0.75, Yt, 1e-5)
    Bn, H, S = (1, 2, 128) if args.quick else (4, 16, 4096)
    for D in (64, 128):
        Q, K, V = r(Bn, H, S, D), r(Bn, H, S, D), r(Bn, H, S, D)
        O = torch.empty_like(Q)
        sdpa = lambda Q=Q, K=K, V=V: torch.nn.functional.scaled_dot_product_attention(Q, K, V)
        ref = sdpa()
        measure("attention", f"b{Bn} h{H} s{S} d{D}", "f16", 4.0 * Bn * H * S * S * D, 4 * Q.nbytes,
                lambda Q=Q, K=K, V=V, O=O, D=D: tdsl_kernel("attention")(Q, K, V, float(D) ** -0.5, out=O),
                {"SDPA": sdpa}, ref, O, 1e-2)
        del Q, K, V, O
        torch.cuda.empty_cache()

    with open(args.json, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)
    names = ["torch", "torch.compile", "triton", "SDPA"]
    print("\n| kernel | shape | dtype | tdslc ms | " + " | ".join(f"{p} ms | ratio {p}/tdslc" for p in names) + " | status |")
    print("|---|---|---|---|" + "---|---|" * len(names) + "---|")
    for row in rows:
        t = row.get("tdsl_ms")
        cells = []
        for p in names:
            pm = row["peers"].get(p)
            cells += ["-" if pm is None else f"{pm:.3f}",
                      "-" if pm is None or t is None else f"{pm / t:.4f}"]
        print(f"| {row['kernel']} | {row['shape']} | {row['dtype']} | {'-' if t is None else f'{t:.3f}'} | "
              + " | ".join(cells) + f" | {row.get('status')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
