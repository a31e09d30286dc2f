#!/usr/bin/env python3
"""Runs `tdslc --check` on every example over the shape matrix.

Every size symbol of every kernel takes each of 1, 7, 33 and 64 in turn
while the others stay small (3); all symbols together take 1 and 7, and 33
and 64 where the kernel has few enough symbols:
odd sizes, a size of one and a tile-sized 64 for each dimension, without
the cost of 64 in every dimension at once (a 64^7 convolution would take
the interpreter hours). Prints one line per run; exits 1 on any failure.

    check_examples.py TDSLC EXAMPLES                 # the shape matrix
    check_examples.py TDSLC EXAMPLES --each-pass-off # every example at 7 and at
        M=33-style odd sizes with each pass of --list-passes disabled in turn
        (map-to-gpu stays: without it nothing maps to the GPU)
"""
import concurrent.futures
import os
import re
import subprocess
import sys


def symbols(tdslc, path):
    """Size symbols per kernel, read from `--emit=ast`."""
    out = subprocess.run([tdslc, path, "--emit=ast"], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{path}: --emit=ast failed:\n{out.stderr}")
    syms = set()
    for line in out.stdout.splitlines():
        m = re.match(r"\s*sizes:?\s*(.*)$", line)
        if m:
            syms.update(s for s in re.split(r"[,\s]+", m.group(1)) if s)
    return sorted(syms)


def configs(syms):
    yield "1"
    yield "7"
    # Every dimension at once at 33 and 64 where the interpreter can afford
    # it (the work grows as size ** number of symbols).
    if len(syms) <= 4:
        yield "33"
    if len(syms) <= 3:
        yield "64"
    for s in syms:
        for v in (1, 7, 33, 64):
            yield f"3,{s}={v}"


def run(tdslc, path, sizes, seed, flags=()):
    cmd = [tdslc, path, "--check", "--sizes", sizes, "--seed", str(seed), *flags]
    out = subprocess.run(cmd, capture_output=True, text=True)
    return path, sizes + "".join(" " + f for f in flags), out.returncode, out.stdout + out.stderr


def passes(tdslc):
    out = subprocess.run([tdslc, "--list-passes"], capture_output=True, text=True, check=True)
    return [line.split()[0] for line in out.stdout.splitlines() if line.strip()]


def main():
    tdslc, examples = sys.argv[1], sys.argv[2]
    each_pass_off = "--each-pass-off" in sys.argv[3:]
    files = sorted(os.path.join(examples, f) for f in os.listdir(examples) if f.endswith(".tdsl"))
    jobs = []
    for i, path in enumerate(files):
        if each_pass_off:
            # Odd sizes that leave partial tiles everywhere: 7 in every
            # dimension, and 33 in each one in turn where the kernel is
            # small enough for the interpreter.
            syms = symbols(tdslc, path)
            size_sets = ["7"] + ([f"5,{s}=33" for s in syms] if len(syms) <= 3 else [])
            for p in passes(tdslc):
                if p == "map-to-gpu":
                    continue
                for sizes in size_sets:
                    jobs.append((path, sizes, i + 1, (f"--disable-pass={p}",)))
            continue
        for sizes in dict.fromkeys(configs(symbols(tdslc, path))):
            jobs.append((path, sizes, i + 1))
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for path, sizes, rc, text in pool.map(lambda j: run(tdslc, *j), jobs):
            name = os.path.basename(path)
            status = "ok" if rc == 0 else "FAIL"
            print(f"{status:4} {name:24} --sizes {sizes}")
            if rc != 0:
                failed += 1
                print(text)
    print(f"{len(jobs) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
