#!/usr/bin/env python3
"""Fails when a kernel spills: reads `tdslc --emit=report`, whose ptxas lines
come from driver/Toolchain.h's parser of `ptxas -v`.

  spills.py examples TDSLC EXAMPLES ARCH...   every example, every arch
  spills.py report FILE...                    reports already written
"""
import glob
import os
import re
import subprocess
import sys

PTXAS = re.compile(r"^\s*ptxas((?: \S+)*): .*spills (\d+) B stores / (\d+) B loads$")


def spills(name, report):
    """The problems in one report: spills, or no ptxas numbers at all."""
    problems, entries = [], 0
    kernel = "?"
    for line in report.splitlines():
        if line.startswith("kernel "):
            kernel = line.split()[1]
        elif line.lstrip().startswith("launch "):
            launch = line.split()[1]
        elif "ptxas: no entry" in line:
            problems.append("%s: kernel %s: %s" % (name, kernel, line.strip()))
        m = PTXAS.match(line)
        if not m:
            continue
        entries += 1
        stores, loads = int(m.group(2)), int(m.group(3))
        if stores or loads:
            problems.append("%s: kernel %s launch %s%s spills %d B stores / %d B loads"
                            % (name, kernel, launch, m.group(1) or "", stores, loads))
    if not entries:
        problems.append("%s: no ptxas numbers in the report" % name)
    return problems


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    problems = []
    if mode == "examples":
        tdslc, examples, archs = args[0], args[1], args[2:]
        for src in sorted(glob.glob(os.path.join(examples, "*.tdsl"))):
            for arch in archs:
                r = subprocess.run([tdslc, src, "--emit=report", "--arch=" + arch],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                name = "%s %s" % (os.path.basename(src), arch)
                if r.returncode != 0:
                    problems.append("%s: tdslc --emit=report failed:\n%s" % (name, r.stdout))
                    continue
                found = spills(name, r.stdout)
                problems += found
                if not found:
                    print("no spills", name)
    elif mode == "report":
        for path in args:
            with open(path) as f:
                problems += spills(os.path.basename(path), f.read())
    else:
        sys.exit("unknown mode " + mode)
    for p in problems:
        print("SPILL-CHECK FAILED:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
