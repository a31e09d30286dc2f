#!/usr/bin/env python3
"""The host cost of one call of a small kernel through the tdsl package,
beside the same launcher called from C in a loop (a bare launch) and
through ctypes without the checks.

    PYTHONPATH=python python3 bench/call_overhead.py [--tdslc build/bin/tdslc] [--calls 20000]

Each row is the wall time of CALLS back-to-back calls divided by CALLS,
synchronized once at the end: with a 4x256 f32 elementwise kernel the GPU
finishes each launch before the host issues the next, so the rows measure
what the host spends per call. Needs torch with a CUDA device and nvcc."""
import argparse
import ctypes
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))
import tdsl  # noqa: E402
from tdsl import _toolchain  # noqa: E402

# dlopens the package's library and times its _with_workspace launcher in a
# loop on the legacy default stream (what a C program calling tdslc's
# launchers pays: the launcher's checks and cudaLaunchKernel).
BARE_C = r"""
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cuda_runtime_api.h>
typedef int (*Fn)(const float *, const float *, const float *, float, float *, int64_t,
                  int64_t, void *, size_t, cudaStream_t);
int main(int argc, char **argv) {
  void *lib = dlopen(argv[1], RTLD_NOW);
  Fn fn = lib ? (Fn)dlsym(lib, "tdsl_elementwise_with_workspace") : 0;
  if (!fn) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
  long calls = atol(argv[2]);
  float *X, *a, *b, *Y;
  cudaMalloc((void **)&X, 4 * 256 * 4); cudaMalloc((void **)&Y, 4 * 256 * 4);
  cudaMalloc((void **)&a, 256 * 4); cudaMalloc((void **)&b, 256 * 4);
  for (int i = 0; i < 100; ++i) fn(X, a, b, 1.5f, Y, 4, 256, 0, 0, 0);
  cudaDeviceSynchronize();
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long i = 0; i < calls; ++i)
    if (fn(X, a, b, 1.5f, Y, 4, 256, 0, 0, 0)) { fprintf(stderr, "launch failed\n"); return 1; }
  cudaDeviceSynchronize();
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("%.3f\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / calls);
  return 0;
}
"""


def per_call_us(fn, calls):
    import torch
    for _ in range(100):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tdslc")
    ap.add_argument("--calls", type=int, default=20000)
    args = ap.parse_args()
    if args.tdslc:
        os.environ["TDSL_TDSLC"] = args.tdslc
    import torch
    if not torch.cuda.is_available():
        print("call_overhead.py: torch sees no CUDA device: nothing measured")
        return 0
    mod = tdsl.compile(os.path.join(REPO, "dsl", "examples", "elementwise.tdsl"))
    k = mod.elementwise
    X = torch.randn(4, 256, device="cuda")
    a, b = torch.randn(256, device="cuda"), torch.randn(256, device="cuda")
    Y = torch.empty_like(X)
    stream = torch.cuda.current_stream().cuda_stream
    raw = k._launch_ws
    rows = [
        ("tdsl package, out= given", lambda: k(X, a, b, 1.5, out=Y)),
        ("tdsl package, output allocated", lambda: k(X, a, b, 1.5)),
        ("ctypes launcher, no checks", lambda: raw(X.data_ptr(), a.data_ptr(), b.data_ptr(),
                                                   1.5, Y.data_ptr(), 4, 256, None, 0, stream)),
        ("torch.add(X, X, out=Y), for scale", lambda: torch.add(X, X, out=Y)),
    ]
    results = [(name, per_call_us(fn, args.calls)) for name, fn in rows]
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "bare.c"), os.path.join(tmp, "bare")
        with open(src, "w") as f:
            f.write(BARE_C)
        nvcc = _toolchain.find_nvcc()
        subprocess.run([nvcc, "-x", "cu", src, "-o", exe,
                        *_toolchain.cudart_link_flags(_toolchain.cuda_home(nvcc)), "-ldl"],
                       check=True)
        bare = subprocess.run([exe, mod.library, str(args.calls)], capture_output=True,
                              text=True, check=True).stdout.strip()
        results.insert(0, ("bare launch from C", float(bare)))
    print(f"per-call host time, {args.calls} calls of elementwise 4x256 f32 "
          f"({torch.cuda.get_device_name()}):")
    for name, us in results:
        print(f"  {name:<36} {us:8.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
