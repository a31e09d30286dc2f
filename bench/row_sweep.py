#!/usr/bin/env python3
"""A row-chain schedule against another over row shapes, with torch eager,
torch.compile and torch's copy in the same run: how a change to softmax or
cross-entropy is checked on rows the suite does not hold (vocabularies of
32000, 50257 and 128256 words, 393216-wide rows, 64-wide ones).

    python3 bench/row_sweep.py [--base KEY=VALUE,...] [--new KEY=VALUE,...]
        [--base-tdslc PATH] [--new-tdslc PATH] [--arch sm_90] [--out DIR] [--quick]
        [--only softmax,cross_entropy,layernorm,rmsnorm] [--rows RxC,...]

bench/suite's softmax and cross_entropy (and, with --only, layernorm and
rmsnorm) are compiled twice by the tdsl
package, with the knobs of --base and of --new pinned (default: base
online_softmax=off, new none), each by its own tdslc where --base-tdslc and
--new-tdslc name two builds, and called on the same f16 tensors (uniform
[-4, 4)). First, rows with -inf (a whole row, all but one element, half,
every third) against torch, NaNs included, for both. Then per shape: the
fraction of the copy's speed (torch's Y.copy_(X) over the kernel's time;
cross-entropy moves half the copy's bytes), new / base speed, new against
torch and torch.compile, and the largest error over the first 64 rows
against torch in f64. Times are medians of 5 runs of 20 back-to-back
launches (CUDA events). Without torch or a GPU it says so and exits 0."""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "bench"))
import tdsl  # noqa: E402
from schedule_sweep import (build_all, compiled_only, median_ms, suite_source,  # noqa: E402
                            sweep_parser, variants_of)

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None

SHAPES = [(8192, 8192), (2048, 32000), (128, 131072), (262144, 64), (4096, 50257),
          (1024, 128256), (4096, 393216),
          # Rows of 8193 to 32768 elements: the held launches where C is open.
          (16384, 9216), (2048, 24576)]
KERNELS = ("softmax", "cross_entropy", "layernorm", "rmsnorm")


def masked_rows(mods, variants, only):
    """Rows with -inf against torch, NaNs in the same places."""
    bad = []
    for C in (9000, 9001, 2048, 37):
        X = torch.randn(6, C, device="cuda").half()
        X[0, : C // 2] = -float("inf")
        X[1, : C - 1] = -float("inf")
        X[2, :] = -float("inf")
        X[3, ::3] = -float("inf")
        lab = torch.full((6,), C - 1, device="cuda", dtype=torch.int32)
        for v in variants:
            if "softmax" in only:
                Y, ref = mods[("softmax", v)].softmax(X), torch.softmax(X.double(), -1)
                if not (torch.equal(Y.isnan(), ref.isnan()) and torch.allclose(
                        Y.double().nan_to_num(), ref.nan_to_num(), atol=1e-3, rtol=1e-2)):
                    bad.append(f"softmax C={C} {v}")
            if "cross_entropy" in only:
                L = mods[("cross_entropy", v)].cross_entropy(X, lab)
                ref = F.cross_entropy(X.double(), lab.long(), reduction="none")
                big = dict(posinf=1e30, neginf=-1e30)
                if not (torch.equal(L.isnan(), ref.isnan()) and torch.allclose(
                        L.double().nan_to_num(**big), ref.nan_to_num(**big), atol=1e-3, rtol=1e-3)):
                    bad.append(f"cross_entropy C={C} {v}")
    return bad


def peer_of(k, X, Y, lab, loss, gamma, beta, w):
    """How kernel k is called on the shape's tensors, its f64 reference over
    the first 64 rows, what to compare with it, torch's eager form, and the
    share of the copy's bytes it moves."""
    head = X[:64].double()
    if k == "softmax":
        return ((lambda fn: lambda: fn(X, out=Y)), torch.softmax(head, -1), lambda: Y[:64],
                lambda: torch.softmax(X, -1), 1.0)
    if k == "cross_entropy":
        l64 = lab.long()
        return ((lambda fn: lambda: fn(X, lab, out=loss)),
                F.cross_entropy(head, lab[:64].long(), reduction="none"), lambda: loss[:64],
                lambda: F.cross_entropy(X, l64, reduction="none"), 0.5)
    if k == "layernorm":
        g16, b16 = gamma.half(), beta.half()
        ref = F.layer_norm(head, (X.shape[1],), gamma.double(), beta.double(), 1e-5)
        return ((lambda fn: lambda: fn(X, gamma, beta, out=Y)), ref, lambda: Y[:64],
                lambda: F.layer_norm(X, (X.shape[1],), g16, b16, 1e-5), 1.0)
    ref = head * torch.rsqrt(head.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()

    def eager():
        Xf = X.float()
        return (Xf * torch.rsqrt(Xf.pow(2).mean(-1, keepdim=True) + 1e-6)).half() * w
    return (lambda fn: lambda: fn(X, w, out=Y)), ref, lambda: Y[:64], eager, 1.0


def main():
    ap = sweep_parser("online_softmax=off", "row-sweep", "two shapes only")
    ap.add_argument("--only", default=",".join(KERNELS[:2]))
    ap.add_argument("--rows", default=None, metavar="RxC,...",
                    help="these shapes instead of the sweep's (e.g. 2048x32000,16384x9216)")
    args = ap.parse_args()
    only = [k for k in KERNELS if k in args.only.split(",")]
    variants = variants_of(args)
    if args.compile_only:
        return compiled_only(args, {k: suite_source(k) for k in only})
    if torch is None or not torch.cuda.is_available():
        print("row_sweep: no torch with a CUDA device here; nothing measured")
        return 0
    mods = build_all({k: suite_source(k) for k in only}, args)
    torch.manual_seed(0)
    bad = masked_rows(mods, variants, only)
    print("rows with -inf: " + ("match torch" if not bad else "MISMATCH " + ", ".join(bad)))
    print(f"base: {args.base or '(no pins)'}; new: {args.new or '(no pins)'}")
    print("| kernel | shape | copy ms | new: of copy (ms) | base: of copy | new / base | "
          "vs torch | vs torch.compile | err new | err base |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    shapes = SHAPES[1:3] if args.quick else SHAPES
    if args.rows:
        shapes = [tuple(int(n) for n in rc.split("x")) for rc in args.rows.split(",")]
    for R, C in shapes:
        X = (torch.rand(R, C, device="cuda") * 8 - 4).half()
        Y = torch.empty_like(X)
        copy_ms = median_ms(lambda: Y.copy_(X))
        lab = torch.randint(0, C, (R,), device="cuda", dtype=torch.int32)
        loss = torch.empty(R, device="cuda")
        gamma, beta = torch.randn(C, device="cuda"), torch.randn(C, device="cuda")
        w = torch.randn(C, device="cuda").half()
        for k in only:
            call_of, ref, got, eager, share = peer_of(k, X, Y, lab, loss, gamma, beta, w)
            ms, err = {}, {}
            for v in variants:
                call = call_of(getattr(mods[(k, v)], k))
                call()
                err[v] = (got().double() - ref).abs().max().item()
                ms[v] = median_ms(call)
            t_eager, t_compiled = median_ms(eager), median_ms(torch.compile(eager))
            print(f"| {k} | {R}x{C} | {copy_ms:.4f} | {copy_ms * share / ms['new']:.3f} "
                  f"({ms['new']:.4f}) | {copy_ms * share / ms['base']:.3f} | "
                  f"{ms['base'] / ms['new']:.3f} | {t_eager / ms['new']:.2f}x | "
                  f"{t_compiled / ms['new']:.2f}x | {err['new']:.1e} | {err['base']:.1e} |",
                  flush=True)
            torch._dynamo.reset()
        del X, Y
        torch.cuda.empty_cache()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
