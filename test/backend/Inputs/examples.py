#!/usr/bin/env python3
"""Runs one step over every example (lit's internal shell has no loops).

  examples.py emit TDSLC EXAMPLES OUT [ARGS...]   .cu and .h of each, twice,
                                                  byte-identical (cmp)
  examples.py nvcc NVCC INCLUDE OUT ARCH...       nvcc -c each .cu per arch
  examples.py cc CC CFLAGS... -- OUT              compile each .h (C or C++)
"""
import filecmp
import glob
import os
import subprocess
import sys


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit("FAILED: %s\n%s" % (" ".join(cmd), r.stdout))
    return r.stdout


def emit(tdslc, examples, out, extra):
    os.makedirs(out, exist_ok=True)
    for src in sorted(glob.glob(os.path.join(examples, "*.tdsl"))):
        base = os.path.join(out, os.path.basename(src)[:-5])
        run([tdslc, src, "-o", base + ".cu", "--header=" + base + ".h"] + extra)
        run([tdslc, src, "-o", base + ".again.cu", "--header=" + base + ".again.h"] + extra)
        for ext in (".cu", ".h"):
            if not filecmp.cmp(base + ext, base + ".again" + ext, shallow=False):
                sys.exit("not deterministic: %s%s" % (base, ext))
        print("emitted", os.path.basename(base))


def nvcc(nvcc_path, include, out, archs):
    for cu in sorted(glob.glob(os.path.join(out, "*.cu"))):
        if cu.endswith(".again.cu"):
            continue
        for arch in archs:
            run([nvcc_path, "-c", "-arch=" + arch, "-Werror", "all-warnings",
                 "-I" + include, cu, "-o", cu[:-3] + "." + arch + ".o"])
            print("compiled", os.path.basename(cu), arch)


def cc(cmd, out):
    for h in sorted(glob.glob(os.path.join(out, "*.h"))):
        if h.endswith(".again.h"):
            continue
        run(cmd + [h])
        print("header ok", os.path.basename(h))


def main():
    mode = sys.argv[1]
    if mode == "emit":
        emit(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    elif mode == "nvcc":
        nvcc(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    elif mode == "cc":
        sep = sys.argv.index("--")
        cc(sys.argv[2:sep], sys.argv[sep + 1])
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
