#!/usr/bin/env python3
"""Two builds (or two schedules) of the fusion rules over kernels the suite
does not hold, each against its physical limit and torch eager in the same
run: GEMM epilogues of several levels and of outputs, a weight-only i8 GEMM,
weighted row reductions (RMSNorm's backward, a weighted softmax, GEMVs
batched or not), column means, permutes (NHWC to NCHW, a 3-D reversal)
and maps beside one another.

    python3 bench/fusion_sweep.py [--base KEY=VALUE,...] [--new KEY=VALUE,...]
        [--base-tdslc PATH] [--new-tdslc PATH] [--arch sm_90] [--out DIR] [--quick]
        [--only levels,gemv,...]

Each kernel (KERNELS below) is compiled twice by the tdsl package, as
schedule_sweep.py does (default: base fuse=off, new none). The limit is
cuBLAS's f16 GEMM alone (torch's A @ B; for the i8 GEMM on the weight
dequantized beforehand) for products, torch's copy of the bytes the kernel
moves for the rest. Each row gives limit ms / kernel ms for base and new
(the fraction of the limit), new / base speed, and torch eager ms / new ms.
Times are medians of 5 runs of 20 back-to-back launches, base and new
alternated over three rounds, the middle one kept. The check is the
largest |out - ref| / (|ref| + mean |ref|) against f64 torch; over the
kernel's tolerance the row says BAD. Without torch or a GPU it says so and
exits 0."""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "bench"))
from schedule_sweep import build_all, compiled_only, median_ms, sweep_parser, variants_of  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None

KERNELS = {
    "levels": """kernel levels(A: f16[M, K], B: f16[K, N], bias: f32[N], R: f16[M, N]) -> (C: f16[M, N]) {
  acc[m, n] += A[m, k] * B[k, n]
  h[m, n] = gelu(acc[m, n] + bias[n])
  C[m, n] = h[m, n] + R[m, n]
}""",
    "kept": """kernel kept(A: f16[M, K], B: f16[K, N]) -> (C: f32[M, N], D: f16[M, N]) {
  C[m, n] += A[m, k] * B[k, n]
  D[m, n] = relu(C[m, n])
}""",
    "w8": """kernel w8(X: f16[M, K], Wq: i8[K, N], s: f32[N]) -> (C: f16[M, N]) {
  C[m, n] += X[m, k] * (Wq[k, n] * s[n])
}""",
    "rmsbwd": """kernel rmsbwd(X: f32[R, C], w: f32[C], dY: f32[R, C], rstd: f32[R]) -> (dX: f32[R, C]) {
  dot[r] += dY[r, c] * w[c] * X[r, c]
  dX[r, c] = rstd[r] * (dY[r, c] * w[c] - rstd[r] * rstd[r] * dot[r] * X[r, c] / C)
}""",
    "wsoftmax": """kernel wsoftmax(X: f16[R, C], w: f16[C]) -> (Y: f16[R, C]) {
  mx[r] max= X[r, c]
  s[r] += exp(X[r, c] - mx[r]) * w[c]
  Y[r, c] = exp(X[r, c] - mx[r]) * w[c] / s[r]
}""",
    "gemv": """kernel gemv(A: f16[M, K], x: f16[K], b: f32[M]) -> (z: f16[M]) {
  y[m] += A[m, k] * x[k]
  z[m] = gelu(y[m] + b[m])
}""",
    "bgemv": """kernel bgemv(A: f16[Z, M, K], x: f16[Z, K]) -> (y: f16[Z, M]) {
  t[z, m] += A[z, m, k] * x[z, k]
  y[z, m] = gelu(t[z, m])
}""",
    "colmean": """kernel colmean(X: f32[R, C]) -> (Y: f32[C]) {
  s[c] += X[r, c]
  Y[c] = s[c] / R
}""",
    "to_nchw": """kernel to_nchw(X: f32[N, H, W, C]) -> (Y: f32[N, C, H, W]) {
  Y[n, c, h, w] = X[n, h, w, c]
}""",
    "reverse": """kernel reverse(X: f32[A, B, C]) -> (Y: f32[C, B, A]) {
  Y[c, b, a] = X[a, b, c]
}""",
    "beside": """kernel beside(X: f16[R, C], b: f16[C]) -> (Y: f16[R, C], Z: f16[R, C]) {
  Y[r, c] = X[r, c] * 2.0 + b[c]
  Z[r, c] = relu(X[r, c] + b[c])
}""",
}


def copy_ms(nbytes):
    """torch's copy moving nbytes in all (half read, half written)."""
    x = torch.empty(max(nbytes // 4, 1), device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    return median_ms(lambda: y.copy_(x))


def cases(quick):
    """(kernel, shape, inputs, outputs (one list per variant), references,
    limit ms, torch eager, tolerance)."""
    h, f32 = torch.float16, torch.float32

    def rnd(*s, dt=h):
        return (torch.rand(*s, device="cuda") * 2 - 1).to(dt)

    def outs(*shape_dt):
        return lambda: [torch.empty(*s, device="cuda", dtype=d) for s, d in shape_dt]

    pick = (lambda xs: xs[:1]) if quick else (lambda xs: xs)
    for M, N, K in pick([(4096, 4096, 4096), (2048, 2048, 2048), (4096, 11008, 4096)]):
        A, B, bias, R = rnd(M, K), rnd(K, N), rnd(N, dt=f32), rnd(M, N)
        acc = A.float() @ B.float()
        gemm = median_ms(lambda: A @ B)
        yield ("levels", f"{M}x{N}x{K}", [A, B, bias, R], outs(((M, N), h)),
               [F.gelu(acc + bias) + R.float()], gemm, lambda: F.gelu(A @ B + bias) + R, 2e-2)
        yield ("kept", f"{M}x{N}x{K}", [A, B], outs(((M, N), f32), ((M, N), h)),
               [acc, F.relu(acc)], gemm, lambda: F.relu(A @ B), 2e-2)
    for M in pick([4096, 128, 16]):
        X = rnd(M, 4096)
        Wq = torch.randint(-127, 128, (4096, 4096), device="cuda", dtype=torch.int8)
        s = torch.rand(4096, device="cuda") / 64
        Wd = (Wq.float() * s).half()
        yield ("w8", f"{M}x4096x4096", [X, Wq, s], outs(((M, 4096), h)),
               [X.float() @ (Wq.float() * s)], median_ms(lambda: X @ Wd),
               lambda: X @ (Wq.half() * s.half()), 2e-2)
    for R, C in pick([(4096, 4096), (16384, 4096), (4096, 11008)]):
        X, dY, w = rnd(R, C, dt=f32), rnd(R, C, dt=f32), rnd(C, dt=f32)
        rstd = torch.rand(R, device="cuda") + 0.5

        def bwd(X=X, dY=dY, w=w, rstd=rstd):
            r = rstd[:, None]
            return r * (dY * w - r * r * (dY * w * X).sum(1, keepdim=True) * X / C)
        ref = bwd(X.double(), dY.double(), w.double(), rstd.double())
        yield ("rmsbwd", f"{R}x{C}", [X, w, dY, rstd], outs(((R, C), f32)), [ref],
               copy_ms(3 * R * C * 4), bwd, 1e-3)
    for R, C in pick([(8192, 8192), (4096, 4096), (16384, 1024), (1024, 32000)]):
        X, w = rnd(R, C) * 4, (torch.rand(C, device="cuda") + 0.5).half()

        def wsoft(X=X, w=w, dt=f32):
            e = torch.exp(X.to(dt) - X.to(dt).amax(1, keepdim=True)) * w.to(dt)
            return e / e.sum(1, keepdim=True)
        yield ("wsoftmax", f"{R}x{C}", [X, w], outs(((R, C), h)), [wsoft(dt=torch.float64)],
               copy_ms(2 * R * C * 2), lambda: wsoft().half(), 1e-2)
    for M, K in pick([(4096, 4096), (11008, 4096), (4096, 11008), (32000, 4096)]):
        A, x, b = rnd(M, K), rnd(K), rnd(M, dt=f32)
        yield ("gemv", f"{M}x{K}", [A, x, b], outs(((M,), h)),
               [F.gelu(A.double() @ x.double() + b.double())], copy_ms(M * K * 2),
               lambda: F.gelu((A @ x).float() + b).half(), 2e-2)
    for Z, M, K in pick([(32, 4096, 4096), (8, 11008, 4096), (128, 1024, 1024)]):
        A, x = rnd(Z, M, K), rnd(Z, K)
        yield ("bgemv", f"{Z}x{M}x{K}", [A, x], outs(((Z, M), h)),
               [F.gelu(torch.bmm(A.double(), x.double()[:, :, None])[:, :, 0])],
               copy_ms(Z * M * K * 2), lambda: F.gelu(torch.bmm(A, x[:, :, None])[:, :, 0]), 2e-2)
    for R, C in pick([(4096, 4096), (1 << 20, 64), (65536, 1024), (256, 65536)]):
        X = rnd(R, C, dt=f32)
        yield ("colmean", f"{R}x{C}", [X], outs(((C,), f32)), [X.double().mean(0)],
               copy_ms(R * C * 4), lambda: X.mean(0), 1e-4)
    for shape in pick([(32, 56, 56, 256), (8, 128, 128, 64), (64, 14, 14, 1024)]):
        X = rnd(*shape, dt=f32)
        yield ("to_nchw", "x".join(map(str, shape)), [X], outs(((shape[0], shape[3], shape[1], shape[2]), f32)),
               [X.double().permute(0, 3, 1, 2)], copy_ms(2 * X.numel() * 4),
               lambda X=X: X.permute(0, 3, 1, 2).contiguous(), 0)
    for shape in pick([(512, 64, 512), (4096, 8, 4096)]):
        X = rnd(*shape, dt=f32)
        yield ("reverse", "x".join(map(str, shape)), [X], outs((shape[::-1], f32)),
               [X.double().permute(2, 1, 0)], copy_ms(2 * X.numel() * 4),
               lambda X=X: X.permute(2, 1, 0).contiguous(), 0)
    for R, C in pick([(8192, 8192), (4096, 4096), (32768, 1024)]):
        X, b = rnd(R, C), rnd(C)
        yield ("beside", f"{R}x{C}", [X, b], outs(((R, C), h), ((R, C), h)),
               [X.double() * 2 + b.double(), F.relu(X.double() + b.double())],
               copy_ms(3 * R * C * 2), lambda: (X * 2 + b, F.relu(X + b)), 1e-2)


def main():
    ap = sweep_parser("fuse=off", "fusion-sweep", "one shape of each kernel")
    ap.add_argument("--only", default=",".join(KERNELS))
    args = ap.parse_args()
    only = set(args.only.split(","))
    sources = {k: text for k, text in KERNELS.items() if k in only}
    if args.compile_only:
        return compiled_only(args, sources)
    if torch is None or not torch.cuda.is_available():
        print("fusion_sweep: no torch with a CUDA device here; nothing measured")
        return 0
    torch.manual_seed(0)
    variants = variants_of(args)
    mods = build_all(sources, args)
    print(f"base: {args.base or '(no pins)'} by {args.base_tdslc or 'tdslc'}; "
          f"new: {args.new or '(no pins)'} by {args.new_tdslc or 'tdslc'}")
    print("| kernel | shape | limit ms | base of limit | new of limit | new / base | "
          "torch eager / new | check |")
    print("|---|---|---|---|---|---|---|---|")
    bad_rows = 0
    for name, shape, inputs, make_outs, refs, limit, eager, tol in cases(args.quick):
        if name not in only:
            continue
        ms, bad = {}, []
        outs = {v: make_outs() for v in variants}
        fns = {v: (lambda v=v: getattr(mods[(name, v)], name)(*inputs, out=outs[v]))
               for v in variants}
        for v, fn in fns.items():
            for o in outs[v]:
                o.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            err = max(((o.double() - r).abs() / (r.abs() + r.abs().mean())).max().item()
                      for o, r in zip(outs[v], refs))
            if not err <= tol:
                bad.append(f"{v} err {err:.1e}")
        rounds = {v: [] for v in variants}
        for _ in range(3):
            for v, fn in fns.items():
                rounds[v].append(median_ms(fn))
        ms = {v: sorted(t)[1] for v, t in rounds.items()}
        bad_rows += bool(bad)
        print(f"| {name} | {shape} | {limit:.4f} | {limit / ms['base']:.3f} | "
              f"{limit / ms['new']:.3f} | {ms['base'] / ms['new']:.3f} | "
              f"{median_ms(eager) / ms['new']:.3f} | {'BAD: ' + ', '.join(bad) if bad else 'ok'} |",
              flush=True)
    return 1 if bad_rows else 0


if __name__ == "__main__":
    sys.exit(main())
