#!/usr/bin/env python3
"""A tensor-core schedule against another over GEMM shapes, with torch's
matmul (cuBLAS) as the peer of both in the same run: how a change of default
is checked on shapes the suite does not hold (skinny, wide, MLP-sized).

    python3 bench/schedule_sweep.py [--base KEY=VALUE,...] [--new KEY=VALUE,...]
        [--base-tdslc PATH] [--new-tdslc PATH] [--arch sm_90] [--out DIR] [--quick]
        [--only gemm_f16,bgemm_f16,...]

Each suite kernel (bench/suite: gemm_f16 over 34 shapes, gemm_bf16, gemm_tf32,
gemm_i8, bgemm_f16 over 10, gemm_bias_gelu, gated_mlp at T = 4096, 64, 32 and 16,
gemm_f32 over 21 against torch's f32 matmul without tf32, and gemm_f32_cols: f32
products of a constant 1, 16 or 64 columns, each its own kernel; gemv: f16
and f32 products of one column or of one row by W[n, k] or W[k, n], and a
decoder's attention row times V batched; rowsum: f32 and f16 rows summed,
f32 columns summed) is
compiled twice by the tdsl package, with the knobs of --base and of --new pinned (default: base
double_buffer=off, new none: tdslc's own choice), each by its own tdslc where
--base-tdslc and --new-tdslc name two builds, and called on the same
torch tensors as the peer. Times are medians of 5 runs of 20 back-to-back
launches (CUDA events); each row gives peer ms / tdslc ms for both and their
ratio. A relative error over 2e-2 against the peer marks the row BAD.
Without torch or a GPU it says so and exits 0 having measured nothing."""
import argparse
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))
import tdsl  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None

GEMM_SHAPES = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
               (4095, 4097, 1023), (128, 4096, 4096), (16, 4096, 4096), (512, 4096, 4096),
               (4096, 11008, 4096), (4096, 4096, 11008), (8192, 1024, 8192), (2048, 8192, 2048),
               (1536, 1536, 1536), (8192, 8192, 64), (4096, 4096, 128), (4096, 3072, 768),
               # Few output tiles and a long k loop (split_k): a decoder's token, long k.
               (1, 4096, 4096), (16, 4096, 11008), (256, 256, 16384), (128, 128, 65536),
               # Few default tiles, 256 to 384 small ones (the small launch by the copy
               # engine from 264: --base copy_engine=off times it against cp.async).
               (256, 4096, 4096), (320, 4096, 4096), (384, 4096, 4096), (768, 2048, 2048),
               (128, 11008, 4096),
               # A decoder's few tokens against wide weights (a vocabulary, fused projections):
               # many output tiles of at most 64 rows.
               (16, 16384, 4096), (16, 28672, 4096), (64, 16384, 4096), (1, 32000, 4096),
               (16, 128256, 4096), (48, 12288, 4096),
               # Short k loops under many output tiles: the output's bytes bound them.
               (8192, 8192, 128), (4096, 4096, 256), (8192, 4096, 512)]
# Batch x M x N x K: attention-sized products (short k, many heads) and square batches.
BGEMM_SHAPES = [(16, 1024, 1024, 1024), (96, 512, 512, 64), (96, 512, 64, 512), (4, 4096, 4096, 128),
                (32, 1024, 1024, 1024), (8, 2048, 2048, 2048), (64, 512, 512, 512),
                # A decoder's attention scores: a few query rows per head against its keys.
                (32, 1, 4096, 128), (128, 16, 1024, 128), (64, 64, 2048, 128)]
# The CUDA-core f32 GEMM: the default tiles, and few output tiles against a long k loop
# (tile-contraction's split_k): a decoder's rows (its short rows' tiles), square products of
# long k; a short k over a large output and KernelBench's irregular shape.
F32_SHAPES = [(4096, 4096, 4096), (2048, 2048, 2048), (4095, 4097, 1023), (256, 256, 524288),
              (128, 128, 65536), (256, 256, 16384), (1024, 1024, 32768), (64, 4096, 4096),
              (16, 4096, 11008), (1024, 1024, 4096), (2048, 1024, 8192), (512, 512, 8192),
              (1, 4096, 4096), (16, 4096, 4096), (32, 11008, 4096), (64, 16384, 4096),
              (16, 32000, 4096), (8, 1024, 1024), (1024, 1024, 1024), (16384, 16384, 32),
              (8205, 5921, 2949)]
# (N, M, K) of gemm_f32_cols: N a constant of the kernel (a matrix times a
# vector, KernelBench's 256 x 131072 among them, or a few columns).
COLS_SHAPES = [(1, 256, 131072), (1, 4096, 4096), (1, 16384, 1024), (16, 8192, 8192),
               (64, 4096, 4096), (64, 32768, 512)]


def knobs(text):
    """'a=1,b=[2,3]' -> {'a': '1', 'b': '[2,3]'} (brackets keep their commas)."""
    out, depth, cur = {}, 0, ""
    for ch in text + ",":
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            if cur:
                key, _, value = cur.partition("=")
                out[key.strip()] = value.strip()
            cur = ""
        else:
            cur += ch
    return out


def median_ms(fn, reps=20):
    for _ in range(3):
        fn()
    times = []
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / reps)
    return sorted(times)[len(times) // 2]


def compile_with(tdslc, *args, **kwargs):
    """tdsl.compile by tdslc (None: the package's own), which the cache key
    tells apart by its bytes."""
    saved = os.environ.get("TDSL_TDSLC")
    if tdslc:
        os.environ["TDSL_TDSLC"] = os.path.abspath(tdslc)
    try:
        return tdsl.compile(*args, **kwargs)
    finally:
        if saved is None:
            os.environ.pop("TDSL_TDSLC", None)
        else:
            os.environ["TDSL_TDSLC"] = saved


def variants_of(args):
    """{variant: pins} of a sweep's --base and --new."""
    return {"base": knobs(args.base), "new": knobs(args.new)}


def tdslc_of(args, variant):
    """The tdslc that compiles a variant (None: the package's own)."""
    return args.base_tdslc if variant == "base" else args.new_tdslc


def build_all(sources, args):
    """{(kernel, variant): Module}: each source (a path or .tdsl text) compiled
    once per variant, by that variant's tdslc with its pins."""
    return {(k, v): compile_with(tdslc_of(args, v), src, arch=args.arch, schedule=pins,
                                 cache_dir=args.out)
            for k, src in sources.items() for v, pins in variants_of(args).items()}


def compiled_only(args, sources):
    """--compile-only: every library built into --out for --arch, no GPU
    touched, so that a machine without a compiler finds them in its cache."""
    if not args.arch:
        print("--compile-only needs --arch (the cache key holds it)", file=sys.stderr)
        return 2
    built = build_all(sources, args)
    print(f"built {len(built)} libraries into {args.out} for {args.arch}")
    return 0

# Kernels of their own, each with its shapes. gemv: products of one column
# or one row (the rows, then k): a matrix times a column (`B: f16[K, 1]`),
# a row times weights stored as nn.Linear stores them (`W[n, k]`, a
# decoder's one token) or as `x @ W` reads them (`W[k, n]`), in f32 and
# f16, and a batched P @ V. rowsum: f16 row sums and f32 column sums.
GEMV_KERNELS = {
    "gemv_f16_n1": ("kernel gemv_f16_n1(A: f16[M, K], B: f16[K, 1]) -> (C: f16[M, 1]) {\n"
                    "  acc[m, n] += A[m, k] * B[k, n]\n  C[m, n] = acc[m, n]\n}\n",
                    [(4096, 4096), (11008, 4096), (256, 131072)]),
    "gemv_f32_wt": ("kernel gemv_f32_wt(X: f32[1, K], W: f32[N, K]) -> (Y: f32[1, N]) {\n"
                    "  Y[m, n] += X[m, k] * W[n, k]\n}\n",
                    [(4096, 4096), (11008, 4096), (32000, 4096)]),
    "gemv_f16_wt": ("kernel gemv_f16_wt(X: f16[1, K], W: f16[N, K]) -> (Y: f16[1, N]) {\n"
                    "  acc[m, n] += X[m, k] * W[n, k]\n  Y[m, n] = acc[m, n]\n}\n",
                    [(4096, 4096), (11008, 4096), (4096, 11008), (32000, 4096), (4096, 1024)]),
    # A row times weights stored [k, n] (`x @ W`), in f32 and f16, and a
    # decoder's attention over its cache (one query row a head times V[t, d]).
    "gemv_f32_kn": ("kernel gemv_f32_kn(X: f32[1, K], W: f32[K, N]) -> (Y: f32[1, N]) {\n"
                    "  Y[m, n] += X[m, k] * W[k, n]\n}\n",
                    [(4096, 4096), (11008, 4096), (4096, 11008), (32000, 4096)]),
    "gemv_f16_kn": ("kernel gemv_f16_kn(X: f16[1, K], W: f16[K, N]) -> (Y: f16[1, N]) {\n"
                    "  acc[m, n] += X[m, k] * W[k, n]\n  Y[m, n] = acc[m, n]\n}\n",
                    [(4096, 4096), (11008, 4096), (4096, 11008), (32000, 4096)]),
    "bgemv_f16_kn": ("kernel bgemv_f16_kn(P: f16[B, 1, T], V: f16[B, T, D]) -> (O: f16[B, 1, D]) {\n"
                     "  acc[b, m, d] += P[b, m, t] * V[b, t, d]\n  O[b, m, d] = acc[b, m, d]\n}\n",
                     [(32, 128, 4096), (128, 128, 1024), (64, 64, 8192)]),
    # Column sums (the reduction along rows, reduce-rows' split), f32.
    "colsum_f32": ("kernel colsum_f32(X: f32[R, C]) -> (Y: f32[C]) {\n  Y[c] += X[r, c]\n}\n",
                   [(8192, 8192), (65536, 256), (256, 65536), (4096, 1024)]),
    # Row sums, reduce-rows' own kernel (bench/suite/rowsum.tdsl is the f32
    # one): f16 rows summed in f32.
    "rowsum_f16": ("kernel rowsum_f16(X: f16[R, C]) -> (Y: f32[R]) {\n  Y[r] += X[r, c]\n}\n",
                   [(8192, 8192), (256, 131072), (65536, 1024), (32768, 1536), (32768, 2048),
                    (1000, 4000)]),
}
# (R, C) of bench/suite/rowsum.tdsl's f32 rows.
ROWSUM_SHAPES = [(8192, 8192), (256, 131072), (65536, 1024), (1000, 4000), (16384, 100)]


SUITE_KERNELS = ("gemm_f16", "gemm_bf16", "gemm_tf32", "gemm_i8", "bgemm_f16", "gemm_bias_gelu",
                 "gated_mlp", "gemm_f32", "gemm_f32_cols", "gemv", "rowsum")


def cols_kernel(n):
    return f"gemm_f32_n{n}"


def group_of(name):
    """The --only name a kernel is timed under."""
    if name.startswith("gemm_f32_n"):
        return "gemm_f32_cols"
    if name in ("rowsum_f16", "colsum_f32"):
        return "rowsum"
    return "gemv" if name in GEMV_KERNELS else name


def suite_source(name):
    """A suite kernel's file, or gemm_f32_cols' text of N columns."""
    if name.startswith("gemm_f32_n"):
        n = int(name[len("gemm_f32_n"):])
        return (f"kernel {name}(A: f32[M, K], B: f32[K, {n}]) -> (C: f32[M, {n}]) {{\n"
                "  C[m, n] += A[m, k] * B[k, n]\n}\n")
    if name in GEMV_KERNELS:
        return GEMV_KERNELS[name][0]
    return os.path.join(REPO, "bench", "suite", name + ".tdsl")


def kernels_of(only):
    """The kernels --only times: gemm_f32_cols is one per N."""
    out = []
    for k in only:
        if k == "gemm_f32_cols":
            out += sorted({cols_kernel(n) for n, _, _ in COLS_SHAPES})
        else:
            out += ([n for n in GEMV_KERNELS if group_of(n) == k]
                    if k in ("gemv", "rowsum") else [k])
        if k == "rowsum":
            out.append("rowsum")
    return out


def f32_matmul(a, b):
    """torch's f32 matmul as a user gets it by default: no tf32 (the sweep
    allows tf32 for gemm_tf32's peer)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return a @ b
    finally:
        torch.backends.cuda.matmul.allow_tf32 = True


def cases(quick):
    def rand(*shape, dtype=torch.float16):
        if dtype == torch.int8:
            return torch.randint(-4, 5, shape, device="cuda", dtype=dtype)
        return torch.randn(*shape, device="cuda", dtype=dtype)

    shapes = GEMM_SHAPES[:3] if quick else GEMM_SHAPES
    for m, n, k in shapes:
        yield "gemm_f16", (rand(m, k), rand(k, n)), lambda a, b: a @ b, f"{m}x{n}x{k}"
    if quick:
        return
    bf = torch.bfloat16
    for m in (4096, 8192):
        yield "gemm_bf16", (rand(m, m, dtype=bf), rand(m, m, dtype=bf)), lambda a, b: a @ b, f"{m}^3"
    yield ("gemm_tf32", (rand(4096, 4096, dtype=torch.float32), rand(4096, 4096, dtype=torch.float32)),
           lambda a, b: a @ b, "4096^3")
    yield ("gemm_i8", (rand(4096, 4096, dtype=torch.int8), rand(4096, 4096, dtype=torch.int8)),
           torch._int_mm, "4096^3")
    for nb, m, n, k in BGEMM_SHAPES:
        yield "bgemm_f16", (rand(nb, m, k), rand(nb, k, n)), torch.bmm, f"{nb}x{m}x{n}x{k}"
    yield ("gemm_bias_gelu", (rand(4096, 4096), rand(4096, 4096), rand(4096, dtype=torch.float32)),
           lambda a, b, bias: F.gelu(a.float() @ b.float() + bias).half(), "4096^3")
    # Weights scaled by 1/sqrt(D): with unit ones, silu(g) * u passes f16's range in the peer.
    for t in (4096, 64, 32, 16):
        yield ("gated_mlp", (rand(t, 4096), rand(4096, 11008) / 64, rand(4096, 11008) / 64),
               lambda x, g, u: F.silu(x @ g) * (x @ u), f"T{t} D4096 F11008")
    f32 = torch.float32
    for m, n, k in F32_SHAPES:
        yield "gemm_f32", (rand(m, k, dtype=f32), rand(k, n, dtype=f32)), f32_matmul, f"{m}x{n}x{k}"
    for n, m, k in COLS_SHAPES:
        yield (cols_kernel(n), (rand(m, k, dtype=f32), rand(k, n, dtype=f32)), f32_matmul,
               f"{m}x{n}x{k}")
    for m, k in GEMV_KERNELS["gemv_f16_n1"][1]:
        yield "gemv_f16_n1", (rand(m, k), rand(k, 1)), lambda a, b: a @ b, f"{m}x1x{k}"
    for n, k in GEMV_KERNELS["gemv_f32_wt"][1]:
        yield ("gemv_f32_wt", (rand(1, k, dtype=f32), rand(n, k, dtype=f32)),
               lambda x, w: f32_matmul(x, w.t()), f"1x{n}x{k} W[n, k]")
    for n, k in GEMV_KERNELS["gemv_f16_wt"][1]:
        yield "gemv_f16_wt", (rand(1, k), rand(n, k)), lambda x, w: x @ w.t(), f"1x{n}x{k} W[n, k]"
    for name in ("gemv_f32_kn", "gemv_f16_kn"):
        dt = f32 if "f32" in name else torch.float16
        for n, k in GEMV_KERNELS[name][1]:
            yield (name, (rand(1, k, dtype=dt), rand(k, n, dtype=dt)),
                   f32_matmul if dt == f32 else (lambda x, w: x @ w), f"1x{n}x{k} W[k, n]")
    for b, d, t in GEMV_KERNELS["bgemv_f16_kn"][1]:
        yield "bgemv_f16_kn", (rand(b, 1, t), rand(b, t, d)), torch.bmm, f"{b}x1x{d}x{t}"
    for r, c in GEMV_KERNELS["colsum_f32"][1]:
        yield "colsum_f32", (rand(r, c, dtype=f32),), lambda x: x.sum(0), f"{r}x{c}"
    for r, c in ROWSUM_SHAPES:
        yield "rowsum", (rand(r, c, dtype=f32),), lambda x: x.sum(1), f"{r}x{c}"
    for r, c in GEMV_KERNELS["rowsum_f16"][1]:
        yield "rowsum_f16", (rand(r, c),), lambda x: x.sum(1, dtype=f32), f"{r}x{c}"


def sweep_parser(base, out, quick):
    """The options of a sweep of two schedules (this one, row_sweep.py)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default=base)
    ap.add_argument("--new", default="")
    ap.add_argument("--base-tdslc", default=None,
                    help="the tdslc that compiles base (default: the tdsl package's own); with "
                    "--new-tdslc, two builds compared (their runtimes beside them: PREFIX/bin, "
                    "PREFIX/lib, as `cmake --install` lays them out)")
    ap.add_argument("--new-tdslc", default=None, help="the tdslc that compiles new")
    ap.add_argument("--arch", default=None, help="default: the GPU's own")
    ap.add_argument("--out", default=os.path.join(REPO, "build", out))
    ap.add_argument("--quick", action="store_true", help=quick)
    ap.add_argument("--compile-only", action="store_true",
                    help="build every library into --out for --arch and stop (no torch or GPU "
                    "needed); carry --out to the GPU machine and pass it the same options")
    return ap


def main():
    ap = sweep_parser("double_buffer=off", "schedule-sweep", "three f16 shapes only")
    ap.add_argument("--only", default=",".join(SUITE_KERNELS), help="the suite kernels to time")
    args = ap.parse_args()
    only = [k for k in SUITE_KERNELS if k in args.only.split(",")]
    if args.compile_only:
        return compiled_only(args, {k: suite_source(k) for k in kernels_of(only)})
    if torch is None or not torch.cuda.is_available():
        print("schedule_sweep: no torch with a CUDA device here; nothing measured")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.manual_seed(0)
    variants = variants_of(args)
    built = {}
    print(f"base: {args.base or '(no pins)'} by {args.base_tdslc or 'tdslc'}; "
          f"new: {args.new or '(no pins)'} by {args.new_tdslc or 'tdslc'}")
    print("| kernel | shape | peer ms | base | new | new / base |")
    print("|---|---|---|---|---|---|")
    for name, inputs, peer, shape in cases(args.quick):
        if group_of(name) not in only:
            continue
        for v, pins in variants.items():
            if (name, v) not in built:
                built[(name, v)] = compile_with(tdslc_of(args, v), suite_source(name), arch=args.arch,
                                                schedule=pins, cache_dir=args.out)
        ref = peer(*inputs).double()
        peer_ms = median_ms(lambda: peer(*inputs))
        ms, bad = {}, []
        for v in variants:
            kernel = getattr(built[(name, v)], name)
            err = ((kernel(*inputs).double() - ref).norm() / ref.norm()).item()
            if not err <= 2e-2:
                bad.append(f"{v} err {err:.1e}")
            ms[v] = median_ms(lambda: kernel(*inputs))
        print(f"| {name} | {shape} | {peer_ms:.4f} | {peer_ms / ms['base']:.3f} | "
              f"{peer_ms / ms['new']:.3f} | {ms['base'] / ms['new']:.3f} |"
              + (" BAD: " + ", ".join(bad) if bad else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
