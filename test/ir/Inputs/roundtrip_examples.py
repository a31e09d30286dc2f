#!/usr/bin/env python3
"""print -> parse -> print is the identity for every example's IR.

tdslc prints each example's loop IR as lowered (--emit=ir) and after the
pipeline at -O0 and -O2 (--emit=loops); tdsl-opt (no passes) parses and prints
it again; the two texts must be byte-identical, and so must a second pass.
"""
import os
import subprocess
import sys


def run(cmd, stdin=None):
    out = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {out.returncode}:\n{out.stderr}")
    return out.stdout


examples = sys.argv[1]
count = 0
for name in sorted(os.listdir(examples)):
    if not name.endswith(".tdsl"):
        continue
    for stage in (["--emit=ir"], ["--emit=loops", "-O0"], ["--emit=loops", "-O2"]):
        first = run(["tdslc", os.path.join(examples, name)] + stage)
        second = run(["tdsl-opt", "-"], first)
        third = run(["tdsl-opt", "-"], second)
        if not (first == second == third):
            sys.exit(f"FAIL: {name} {' '.join(stage)}: the IR changed in a round trip")
        count += 1
print(f"{count} round trips ok")
