#!/usr/bin/env python3
"""Roofline and ablation-ladder PNGs from tdsl-bench's JSON.

    python3 bench/plot.py bench.json [ablation.json ...] --out DIR

The roofline: x = arithmetic intensity (FLOP per byte moved), y = TFLOP/s,
both log10; the roof is min(matrix peak, intensity * copy bandwidth), both
measured in the same run (peak: best cuBLAS f16 rate). Each suite kernel is
a point (tdslc: red; its peer: blue). Each ladder (ablation.json: the f32
GEMM's passes; ablation-f16.json: the tensor-core knobs): one bar per rung,
height = TFLOP/s, with cuBLAS as the last, blue bar, in ablation.png or
ablation-<dtype>.png. Uses matplotlib where present,
else a tiny PNG writer (zlib + struct) drawing the same marks without text;
then DIR/plots.txt says what the axes span."""
import json
import math
import os
import struct
import sys
import zlib


class Canvas:
    def __init__(self, w, h):
        self.w, self.h = w, h
        self.px = bytearray(b"\xff" * (w * h * 3))

    def dot(self, x, y, rgb, r=0):
        for dy in range(-r, r + 1):
            for dx in range(-r, r + 1):
                xx, yy = int(x) + dx, int(y) + dy
                if 0 <= xx < self.w and 0 <= yy < self.h:
                    i = (yy * self.w + xx) * 3
                    self.px[i:i + 3] = bytes(rgb)

    def line(self, x0, y0, x1, y1, rgb):
        n = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
        for i in range(n + 1):
            t = i / n
            self.dot(x0 + (x1 - x0) * t, y0 + (y1 - y0) * t, rgb)

    def rect(self, x0, y0, x1, y1, rgb):
        for y in range(int(min(y0, y1)), int(max(y0, y1)) + 1):
            self.line(x0, y, x1, y, rgb)

    def save(self, path):
        raw = b"".join(b"\x00" + bytes(self.px[y * self.w * 3:(y + 1) * self.w * 3]) for y in range(self.h))
        chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
        with open(path, "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0))
                    + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def points(bench):
    out = []
    for r in bench["rows"]:
        if not r["bytes"] or r["kernel"].startswith("ablation"):
            continue
        ai = (r["flops"] or 0) / r["bytes"]
        for who, ms in (("tdslc", r["tdsl_ms"]), ("peer", r["peer_ms"])):
            if ms and ai > 0 and (who == "tdslc" or r["peer"] == "cuBLAS"):
                out.append((who, r["kernel"] + " " + r["shape"] + " " + r["dtype"], ai, r["flops"] / ms / 1e9))
    return out


def ladder_rungs(path):
    """(dtype, [(rung, TFLOP/s)...]) of one ablation JSON, cuBLAS last."""
    rows = json.load(open(path))["rows"] if os.path.exists(path) else []
    rungs = [(r["kernel"].split(":", 1)[1], r["flops"] / r["tdsl_ms"] / 1e9 if r["tdsl_ms"] else 0)
             for r in rows]
    if rows and rows[-1]["peer_ms"]:
        rungs.append(("cuBLAS", rows[-1]["flops"] / rows[-1]["peer_ms"] / 1e9))
    return (rows[0]["dtype"] if rows else "f32"), rungs


def ladder_file(dtype):
    return "ablation.png" if dtype == "f32" else f"ablation-{dtype}.png"


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--out")]
    out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else "."
    args = [a for a in args if a != out]
    os.makedirs(out, exist_ok=True)
    bench = json.load(open(args[0]))
    ladders = [lr for lr in (ladder_rungs(a) for a in args[1:]) if lr[1]]
    bw = bench["copy_peak_TBs"]
    peak = max([r["peak"] for r in bench["rows"] if r["dtype"] == "f16" and r["compute_bound"] and r["peak"]] or [1.0])
    pts = points(bench)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(9, 6))
        xs = [10 ** (i / 20) for i in range(-40, 101)]
        ax.loglog(xs, [min(peak, x * bw) for x in xs], "k-", label=f"roof: {bw:.2f} TB/s, {peak:.0f} TFLOP/s (measured)")
        for who, c in (("tdslc", "red"), ("peer", "blue")):
            p = [q for q in pts if q[0] == who]
            ax.scatter([q[2] for q in p], [q[3] for q in p], c=c, label=who, s=14)
        ax.set_xlabel("FLOP / byte"), ax.set_ylabel("TFLOP/s"), ax.legend(), ax.set_title("tdslc suite on the roofline")
        fig.savefig(os.path.join(out, "roofline.png"), dpi=110)
        for dtype, rungs in ladders:
            fig, ax = plt.subplots(figsize=(max(8, len(rungs) * 1.4), 4))
            ax.bar([n for n, _ in rungs], [v for _, v in rungs], color=["red"] * (len(rungs) - 1) + ["blue"])
            ax.set_yscale("log"), ax.set_ylabel("TFLOP/s"), ax.set_title(f"GEMM {dtype} ablation ladder")
            ax.tick_params(axis="x", labelrotation=20, labelsize=8)
            fig.tight_layout()
            fig.savefig(os.path.join(out, ladder_file(dtype)), dpi=110)
        print(f"plot.py: matplotlib wrote {out}/roofline.png"
              + "".join(" and " + ladder_file(d) for d, _ in ladders))
        return 0
    except ImportError:
        pass
    W, H, M = 800, 560, 40
    x0, x1, y0, y1 = -2.0, 5.0, -4.0, 3.5  # log10 spans of FLOP/byte and TFLOP/s
    X = lambda ai: M + (math.log10(ai) - x0) / (x1 - x0) * (W - 2 * M)
    Y = lambda tf: H - M - (math.log10(max(tf, 1e-9)) - y0) / (y1 - y0) * (H - 2 * M)
    c = Canvas(W, H)
    c.line(M, H - M, W - M, H - M, (0, 0, 0)), c.line(M, M, M, H - M, (0, 0, 0))
    for d in range(int(x0), int(x1) + 1):
        c.line(X(10 ** d), H - M, X(10 ** d), H - M + 6, (0, 0, 0))
    for d in range(int(y0), int(y1) + 1):
        c.line(M - 6, Y(10 ** d), M, Y(10 ** d), (0, 0, 0))
    prev = None
    for i in range(141):
        ai = 10 ** (x0 + (x1 - x0) * i / 140)
        pt = (X(ai), Y(min(peak, ai * bw)))
        if prev:
            c.line(*prev, *pt, (0, 0, 0))
        prev = pt
    for who, _, ai, tf in pts:
        c.dot(X(ai), Y(tf), (220, 0, 0) if who == "tdslc" else (0, 0, 220), 3)
    c.save(os.path.join(out, "roofline.png"))
    notes = [f"roofline.png: x log10 FLOP/byte from 1e{x0:g} to 1e{x1:g} (ticks per decade), "
             f"y log10 TFLOP/s from 1e{y0:g} to 1e{y1:g}; roof {bw:.2f} TB/s and {peak:.1f} TFLOP/s "
             "(measured); red tdslc, blue cuBLAS. Points:"]
    notes += [f"  {who:5s} {name}: {ai:.3g} FLOP/B, {tf:.4g} TFLOP/s" for who, name, ai, tf in pts]
    for dtype, rungs in ladders:
        c = Canvas(W, H)
        c.line(M, H - M, W - M, H - M, (0, 0, 0))
        bw_ = (W - 2 * M) / len(rungs)
        for i, (name, tf) in enumerate(rungs):
            col = (0, 0, 220) if name == "cuBLAS" else (220, 0, 0)
            c.rect(M + i * bw_ + 8, H - M, M + (i + 1) * bw_ - 8, Y(tf), col)
        c.save(os.path.join(out, ladder_file(dtype)))
        notes.append(f"{ladder_file(dtype)}: bars left to right, height log10 TFLOP/s on the same y axis: "
                     + ", ".join(f"{n} {v:.4g}" for n, v in rungs))
    open(os.path.join(out, "plots.txt"), "w").write("\n".join(notes) + "\n")
    print(f"plot.py: no matplotlib; wrote {out}/roofline.png"
          + "".join(", " + ladder_file(d) for d, _ in ladders) + " and plots.txt (axes and values)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
