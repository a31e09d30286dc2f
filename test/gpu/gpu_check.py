#!/usr/bin/env python3
"""GPU suite: every example kernel, compiled by tdslc and nvcc, run on the GPU
over a shape matrix and compared with the reference evaluator.

    python3 test/gpu/gpu_check.py --tdslc build/bin/tdslc [--examples dsl/examples]
        [--out DIR] [--arch sm_90] [--quick] [--sanitize] [--build-only] [--jobs N]
        [--programs DIR] [--prebuilt]

--build-only on a machine without a GPU, then --prebuilt with the same --out
directory carried to the GPU machine (under any path), runs the libraries
built there: the device spends no time on tdslc, nvcc or the reference.

With --programs DIR, the .tdsl files there (tdsl-smith --emit-dir DIR) take
the examples' place, each run at the one shape its '# sizes:' line records,
with the --dump-io flags of its '# dump-io:' line.

For every example (built once: tdslc --emit=cuda + header, nvcc with the
runtime into a shared library) and every shape of its matrix (every size
symbol 1, all 7, all 33, each symbol 127 and 257 with the others small, one
larger shape), it writes the seeded inputs and reference outputs with
`tdslc --dump-io`, poisons the outputs (0xFF bytes: NaN for floats), calls
the launcher on stream 0 through ctypes, checks the status, copies the
outputs back and compares them with the tolerance --dump-io wrote; guard
bytes around every buffer catch writes just past a tensor. It also
tests the launcher contract (NULL pointer, size 0, the _launch_info query)
and, with --sanitize, reruns the quick shapes under compute-sanitizer's
memcheck, racecheck, initcheck and synccheck.

One line per kernel and shape; the last line is "N passed, N failed".
Exit status: 0 if everything passed, 1 otherwise, 2 without a CUDA device.
No torch or numpy: device memory goes through ctypes on libcudart.so.
"""
import argparse
import concurrent.futures
import ctypes
import glob
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The runtime's C ABI (status names, tdsl_f16, tdsl_launch_info) as the
# package spells it for ctypes, and its rule for finding nvcc: python/tdsl
# needs only the standard library to import, and the sources beside this
# file are always there.
sys.path.insert(0, os.path.join(REPO, "python"))
from tdsl import TdslError, _toolchain  # noqa: E402
from tdsl._abi import STATUS_NAMES, Half, LaunchInfo, status_name  # noqa: E402

# Shapes cost about the product of their sizes in the CPU reference (a
# contraction visits every index of every symbol once); these bounds keep
# one --dump-io run within a few seconds.
COST_LIMIT = 4_000_000
LARGE_COST_LIMIT = 4_500_000
LARGE = 128
SMALL = 5

TDSL_ERROR_NULL_POINTER = STATUS_NAMES.index("TDSL_ERROR_NULL_POINTER")
TDSL_ERROR_INVALID_SIZE = STATUS_NAMES.index("TDSL_ERROR_INVALID_SIZE")

SANITIZER_TOOLS = [
    ("memcheck", ["--tool", "memcheck", "--padding", "512", "--leak-check", "full"]),
    ("racecheck", ["--tool", "racecheck"]),
    ("initcheck", ["--tool", "initcheck"]),
    ("synccheck", ["--tool", "synccheck"]),
]


# --------------------------------------------------------------------------
# Element encodings (the dtype names of tdslc; little-endian, as --dump-io
# writes them).

def element_bytes(dtype):
    return {"i8": 1, "f16": 2, "bf16": 2, "i32": 4, "f32": 4, "tf32": 4, "i64": 8,
            "f64": 8}[dtype]


def decode(dtype, data):
    """The values of a raw little-endian buffer, as Python floats or ints."""
    n = len(data) // element_bytes(dtype)
    if dtype == "bf16":
        return [struct.unpack("<f", struct.pack("<I", b << 16))[0]
                for b in struct.unpack(f"<{n}H", data)]
    fmt = {"i8": "b", "f16": "e", "i32": "i", "f32": "f", "tf32": "f", "i64": "q",
           "f64": "d"}[dtype]
    return list(struct.unpack(f"<{n}{fmt}", data))


def is_float(dtype):
    return dtype in ("f16", "bf16", "tf32", "f32", "f64")


def index_string(shape, flat):
    idx = []
    for extent in reversed(shape):
        idx.append(flat % extent)
        flat //= extent
    return "[" + ", ".join(str(i) for i in reversed(idx)) + "]"


LEAST_NORMAL = {"f16": 6.103515625e-05, "f64": 2.2250738585072014e-308}


def compare(name, shape, dtype, ref, out, tol, terms=None):
    """tdslc --check's rule (driver/Check.cpp, compare): float outputs match
    when |out - ref| <= tol * (max(|ref|, terms) + mean |ref|), terms being
    the size of what each element was computed from (--dump-io's
    terms_file), or |out - ref| <= tol * the dtype's least normal; NaN only
    matches NaN, an infinity only itself; integers are exact. Returns
    (max_err, mismatch or None)."""
    floor = tol * LEAST_NORMAL.get(dtype, 1.1754943508222875e-38)
    scale = sum(abs(v) for v in ref if math.isfinite(v))
    scale = scale / len(ref) if ref else 0.0
    if scale == 0:
        scale = 1e-30
    max_err, where = 0.0, None
    for i, (r, o) in enumerate(zip(ref, out)):
        err = 0.0
        if math.isnan(r) or math.isnan(o):
            match = math.isnan(r) and math.isnan(o)
        elif math.isinf(r) or math.isinf(o):
            match = r == o
        else:
            size = abs(r)
            if terms is not None and i < len(terms) and terms[i] > size:
                size = terms[i]
            err = abs(o - r) / (size + scale)
            match = (err <= tol or abs(o - r) <= floor) if is_float(dtype) else o == r
        max_err = max(max_err, err)
        if not match and where is None:
            where = f"{name}{index_string(shape, i)} = {o:g} expected {r:g}"
    if len(out) != len(ref) and where is None:
        where = f"{name}: {len(out)} elements, expected {len(ref)}"
    return max_err, where


# --------------------------------------------------------------------------
# The emitted header: launcher prototypes, read rather than assumed.

def parse_prototypes(header_text):
    """{function name: [(C type, parameter name), ...]} for every function
    returning tdsl_status."""
    text = re.sub(r"/\*.*?\*/", " ", header_text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    protos = {}
    for m in re.finditer(r"\btdsl_status\s+(\w+)\s*\(([^;{)]*)\)\s*(?:;|\{)", text):
        params = []
        body = m.group(2).strip()
        if body and body != "void":
            for p in body.split(","):
                p = " ".join(p.split())
                pm = re.match(r"(.*?[\s*&])(\w+)\s*(\[\s*\d*\s*\])?$", p)
                if not pm:
                    params.append((p, ""))
                    continue
                ctype = pm.group(1).strip() + (" *" if pm.group(3) else "")
                params.append((ctype, pm.group(2)))
        protos[m.group(1)] = params
    return protos


def ctype_of(ctype):
    base = re.sub(r"\b(const|volatile|struct|restrict|__restrict__|__restrict)\b", "",
                  ctype).strip()
    if "*" in base:
        return ctypes.c_void_p
    base = " ".join(base.split())
    table = {
        "float": ctypes.c_float, "double": ctypes.c_double, "int8_t": ctypes.c_int8,
        "int32_t": ctypes.c_int32, "int64_t": ctypes.c_int64, "int": ctypes.c_int,
        "unsigned": ctypes.c_uint, "unsigned int": ctypes.c_uint, "size_t": ctypes.c_size_t,
        "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64, "long": ctypes.c_long,
        "tdsl_f16": Half, "tdsl_bf16": Half, "cudaStream_t": ctypes.c_void_p,
        "tdsl_launch_info": LaunchInfo,
    }
    if base not in table:
        raise ValueError(f"unexpected parameter type '{ctype}'")
    return table[base]


def scalar_ctype(dtype):
    return {"f32": ctypes.c_float, "tf32": ctypes.c_float, "f64": ctypes.c_double,
            "i8": ctypes.c_int8, "i32": ctypes.c_int32, "i64": ctypes.c_int64,
            "f16": Half, "bf16": Half}[dtype]


def by_value(p):
    """Whether the launcher takes this tensor by value: a rank-0 input. A
    rank-0 output is still written through a pointer (meta.json's
    is_scalar only says rank 0)."""
    return p["is_scalar"] and p["role"] == "in"


def launcher_layout(kernel, meta, protos):
    """Matches the launcher's parameters with meta.json's params and sizes.
    Returns [(kind, key)] with kind 'param' (key: index into meta params),
    'size' (key: index into sizes) or 'stream'. Raises ValueError when the
    prototype does not follow the contract."""
    name = "tdsl_" + kernel
    if name not in protos:
        raise ValueError(f"the header declares no 'tdsl_status {name}(...)'")
    proto = protos[name]
    params, sizes = meta["params"], meta["sizes"]
    expected = len(params) + len(sizes) + 1
    if len(proto) != expected:
        raise ValueError(f"{name} takes {len(proto)} parameters, the contract says "
                         f"{expected} ({len(params)} tensors, {len(sizes)} sizes, stream)")
    # The launcher's parameter names are the .tdsl names (a trailing '_'
    # where that is a C++ keyword): a different order is caught here.
    names = [p["name"] for p in params] + [s["name"] for s in sizes] + ["stream"]
    for i, (ctype, pname) in enumerate(proto[:-1]):
        if pname and pname.rstrip("_") != names[i].rstrip("_"):
            raise ValueError(f"{name} parameter {i + 1} is '{pname}', the contract says "
                             f"'{names[i]}' (inputs, outputs, then sizes in "
                             "--emit=ast order)")
    layout = []
    for i, (ctype, pname) in enumerate(proto):
        if i < len(params):
            p = params[i]
            is_ptr = ctype_of(ctype) is ctypes.c_void_p
            if is_ptr == by_value(p):
                raise ValueError(f"{name} parameter {i + 1} '{ctype} {pname}': tensor "
                                 f"'{p['name']}' is {'a scalar (by value)' if by_value(p) else 'a pointer'}")
            if p["role"] == "in" and is_ptr and "const" not in ctype:
                raise ValueError(f"{name}: input '{p['name']}' is not a const pointer")
            layout.append(("param", i))
        elif i < len(params) + len(sizes):
            if ctype_of(ctype) is not ctypes.c_int64:
                raise ValueError(f"{name} parameter {i + 1} '{ctype} {pname}': sizes are int64_t")
            layout.append(("size", i - len(params)))
        else:
            if "cudaStream_t" not in ctype:
                raise ValueError(f"{name}: the last parameter '{ctype}' is not a cudaStream_t")
            layout.append(("stream", None))
    return layout


# --------------------------------------------------------------------------
# CUDA through ctypes.

class Cuda:
    H2D, D2H = 1, 2

    def __init__(self, cuda_home):
        lib_dir = _toolchain.cuda_lib_dir(cuda_home)
        candidates = [os.path.join(lib_dir, "libcudart.so"),
                      os.path.join(lib_dir, "libcudart.so.13"),
                      os.path.join(cuda_home, "lib", "libcudart.so"),
                      "libcudart.so", "libcudart.so.13", "libcudart.so.12"]
        self.lib, errors = None, []
        for c in candidates:
            try:
                self.lib = ctypes.CDLL(c, mode=ctypes.RTLD_GLOBAL)
                self.path = c
                break
            except OSError as e:
                errors.append(str(e))
        if self.lib is None:
            raise RuntimeError("cannot load libcudart.so: " + "; ".join(errors))
        L = self.lib
        L.cudaGetErrorString.restype = ctypes.c_char_p
        L.cudaGetErrorString.argtypes = [ctypes.c_int]
        L.cudaGetDeviceCount.argtypes = [ctypes.POINTER(ctypes.c_int)]
        L.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        L.cudaFree.argtypes = [ctypes.c_void_p]
        L.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        L.cudaMemset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
        for f in ("cudaGetErrorString", "cudaGetDeviceCount", "cudaMalloc", "cudaFree",
                  "cudaMemcpy", "cudaMemset", "cudaDeviceSynchronize", "cudaGetLastError",
                  "cudaDeviceReset"):
            if f != "cudaGetErrorString":
                getattr(L, f).restype = ctypes.c_int

    def error(self, code):
        return f"{self.lib.cudaGetErrorString(code).decode()} (cudaError {code})"

    def check(self, code, what):
        if code != 0:
            raise RuntimeError(f"{what}: {self.error(code)}")

    def device_count(self):
        n = ctypes.c_int(0)
        code = self.lib.cudaGetDeviceCount(ctypes.byref(n))
        return n.value, code

    def malloc(self, nbytes):
        p = ctypes.c_void_p()
        self.check(self.lib.cudaMalloc(ctypes.byref(p), max(nbytes, 1)), "cudaMalloc")
        return p.value

    def free(self, p):
        self.check(self.lib.cudaFree(ctypes.c_void_p(p)), "cudaFree")

    def upload(self, p, data):
        buf = ctypes.create_string_buffer(bytes(data), len(data))
        self.check(self.lib.cudaMemcpy(ctypes.c_void_p(p), buf, len(data), self.H2D),
                   "cudaMemcpy to the device")

    def download(self, p, nbytes):
        buf = ctypes.create_string_buffer(nbytes)
        self.check(self.lib.cudaMemcpy(buf, ctypes.c_void_p(p), nbytes, self.D2H),
                   "cudaMemcpy from the device")
        return buf.raw

    def fill(self, p, byte, nbytes):
        self.check(self.lib.cudaMemset(ctypes.c_void_p(p), byte, nbytes), "cudaMemset")

    def poison(self, p, nbytes):
        """0xFF bytes: NaN in every float format, -1 in every integer one."""
        self.fill(p, 0xFF, nbytes)

    def synchronize(self):
        return self.lib.cudaDeviceSynchronize()

    def last_error(self):
        return self.lib.cudaGetLastError()

    def reset(self):
        return self.lib.cudaDeviceReset()


class HostMemory(Cuda):
    """--fake-device: "device" buffers in host memory, for testing this
    harness against launchers built to run on the host (no GPU needed)."""

    def __init__(self):
        self.buffers = {}

    def error(self, code):
        return f"cudaError {code}"

    def device_count(self):
        return 1, 0

    def malloc(self, nbytes):
        buf = ctypes.create_string_buffer(max(nbytes, 1))
        self.buffers[ctypes.addressof(buf)] = buf
        return ctypes.addressof(buf)

    def free(self, p):
        del self.buffers[p]

    def upload(self, p, data):
        ctypes.memmove(p, bytes(data), len(data))

    def download(self, p, nbytes):
        return ctypes.string_at(p, nbytes)

    def fill(self, p, byte, nbytes):
        ctypes.memset(p, byte, nbytes)

    def synchronize(self):
        return 0

    def last_error(self):
        return 0

    def reset(self):
        return 0


def find_nvcc(arg):
    """--nvcc, else tdslc's rule ($CUDACXX, PATH, /usr/local/cuda); where
    there is none, the default path, which the build then reports."""
    if arg:
        return arg
    try:
        return _toolchain.find_nvcc()
    except TdslError:
        return _toolchain.DEFAULT_NVCC


def find_sanitizer(cuda_home, override=None):
    if override:
        return override
    for c in (os.path.join(cuda_home, "bin", "compute-sanitizer"),
              os.path.join(_toolchain.DEFAULT_CUDA_HOME, "bin", "compute-sanitizer"),
              shutil.which("compute-sanitizer")):
        if c and os.path.exists(c):
            return c
    return None


# --------------------------------------------------------------------------
# The plan: examples, kernels, shapes.

def read_symbols(tdslc, path):
    """Size symbols per kernel in launcher order, from --emit=ast."""
    out = subprocess.run([tdslc, path, "--emit=ast"], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"tdslc --emit=ast failed:\n{out.stderr}")
    kernels, current = {}, None
    for line in out.stdout.splitlines():
        km = re.match(r"\s*kernel\s+(\w+)", line)
        if km:
            current = km.group(1)
            kernels[current] = []
        sm = re.match(r"\s*sizes:?\s*(.*)$", line)
        if sm and current is not None:
            kernels[current] = [s for s in re.split(r"[,\s]+", sm.group(1)) if s]
    return kernels


def cost(shape):
    c = 1
    for v in shape.values():
        c *= v
    return c


def shape_matrix(syms, quick):
    """[(sizes dict, quick flag)] for the union of a file's size symbols."""
    shapes = []

    def add(d, q=False):
        if d not in [s for s, _ in shapes]:
            shapes.append((d, q))

    add({s: 1 for s in syms}, True)
    add({s: 7 for s in syms}, True)
    if cost({s: 33 for s in syms}) <= COST_LIMIT:
        add({s: 33 for s in syms}, True)
    if quick:
        return shapes
    for s in syms:
        for v in (127, 257):
            d = {t: SMALL for t in syms}
            d[s] = v
            if cost(d) <= COST_LIMIT:
                add(d)
    # One larger shape: every symbol LARGE, leading (batch-like) symbols
    # shrunk to 2 while the reference would take too long; none where more
    # than half of them would have to shrink (convolutions).
    d = {s: LARGE for s in syms}
    shrunk = 0
    for s in syms:
        if cost(d) <= LARGE_COST_LIMIT:
            break
        d[s] = 2
        shrunk += 1
    if cost(d) <= LARGE_COST_LIMIT and shrunk * 2 <= len(syms):
        add(d)
    return shapes


def label(sizes, syms):
    return ",".join(f"{s}={sizes[s]}" for s in syms)


def dirname_of(sizes, syms):
    return "_".join(f"{s}{sizes[s]}" for s in syms) or "scalar"


# --------------------------------------------------------------------------
# Build: dump-io per shape, emit + nvcc per example.

def run_logged(cmd, log_path, env=None):
    start = time.time()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    with open(log_path, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n" + out.stdout + out.stderr +
                f"[exit {out.returncode}, {time.time() - start:.1f} s]\n")
    return out


def build_runtime(args, nvcc, out_dir):
    """Objects of runtime/src/*.cpp, compiled once for every example."""
    rt_dir = os.path.join(out_dir, "build", "runtime")
    os.makedirs(rt_dir, exist_ok=True)
    sources = sorted(glob.glob(os.path.join(args.runtime_src, "*.cpp")) +
                     glob.glob(os.path.join(args.runtime_src, "*.cu")))
    if not sources:
        raise RuntimeError(f"no runtime sources in {args.runtime_src}")
    objects = []
    log = os.path.join(rt_dir, "nvcc.log")
    for src in sources:
        obj = os.path.join(rt_dir, os.path.basename(src) + ".o")
        cmd = [nvcc, "-c", "-O2", "-std=c++17", "-Xcompiler", "-fPIC", f"-arch={args.arch}",
               "-I", args.runtime_include, src, "-o", obj]
        if run_logged(cmd, log).returncode != 0:
            raise RuntimeError(f"nvcc failed on {src}: see {log}")
        objects.append(obj)
    return objects


def build_example(args, nvcc, cuda_home, ex, runtime_objects):
    """tdslc --emit=cuda + header, then one shared library. Returns an error
    string or None."""
    bdir = ex["build_dir"]
    log = os.path.join(bdir, "build.log")
    cu, h, lib = ex["cu"], ex["header"], ex["lib"]
    cmd = [args.tdslc, ex["source"], "--emit=cuda", "-o", cu, f"--header={h}",
           f"--arch={args.arch}"]
    out = run_logged(cmd, log)
    if out.returncode != 0:
        return f"tdslc --emit=cuda failed (exit {out.returncode}): " + \
            (out.stderr.strip().splitlines() or ["no message"])[0] + f"  [{log}]"
    if not os.path.exists(h):
        return f"tdslc wrote no header {h}"
    cmd = [nvcc, "-shared", "-O2", "-std=c++17", "-lineinfo", "-Xcompiler", "-fPIC",
           f"-arch={args.arch}", *(["-DTDSL_ALWAYS_INDEX64"] if args.index64 else []),
           "-I", args.runtime_include, "-I", bdir, cu,
           *runtime_objects, *_toolchain.cudart_link_flags(cuda_home), "-o", lib]
    out = run_logged(cmd, log)
    if out.returncode != 0:
        err = [l for l in (out.stdout + out.stderr).splitlines() if "error" in l]
        return f"nvcc failed (exit {out.returncode}): " + (err or ["see log"])[0] + f"  [{log}]"
    return None


def dump_io(args, ex, shape):
    extra = shape.get("dump_args", [])
    seed = [] if "--seed" in extra else ["--seed", str(args.seed)]
    cmd = [args.tdslc, ex["source"], f"--dump-io={shape['io_dir']}", "--sizes",
           shape["sizes_arg"], *seed, *extra]
    out = run_logged(cmd, os.path.join(ex["build_dir"], "dump-io.log"))
    if out.returncode != 0:
        return f"tdslc --dump-io failed (exit {out.returncode}): " + \
            (out.stderr.strip().splitlines() or ["no message"])[0]
    return None


def program_header(path):
    """A generated program's own shape and --dump-io flags, from the
    `# sizes: M=3,N=7` and `# dump-io: --seed 5 --exact-inputs` lines that
    `tdsl-smith --emit-dir` writes: ({symbol: value} or None, [flags])."""
    sizes, flags = None, []
    with open(path) as f:
        for line in f:
            m = re.match(r"#\s*sizes:\s*(\S*)", line)
            if m:
                # "1" (no '='): a program without size symbols.
                sizes = {k: int(v) for k, v in
                         (kv.split("=", 1) for kv in m.group(1).split(",") if "=" in kv)}
            m = re.match(r"#\s*dump-io:\s*(.*)$", line)
            if m:
                flags = m.group(1).split()
    return sizes, flags


def make_plan(args, out_dir):
    source_dir = args.programs or args.examples
    files = sorted(glob.glob(os.path.join(source_dir, "*.tdsl")))
    if args.only:
        files = [f for f in files if os.path.splitext(os.path.basename(f))[0] in args.only]
    plan = {"arch": args.arch, "examples": []}
    for path in files:
        name = os.path.splitext(os.path.basename(path))[0]
        bdir = os.path.join(out_dir, "build", name)
        os.makedirs(bdir, exist_ok=True)
        ex = {"name": name, "source": os.path.abspath(path), "build_dir": bdir,
              "cu": os.path.join(bdir, name + ".cu"), "header": os.path.join(bdir, name + ".h"),
              "lib": os.path.join(bdir, f"lib{name}.so"), "kernels": {}, "shapes": [],
              "error": None, "program": bool(args.programs)}
        try:
            ex["kernels"] = read_symbols(args.tdslc, path)
        except RuntimeError as e:
            ex["error"] = str(e).splitlines()[0]
        syms = list(dict.fromkeys(s for k in ex["kernels"].values() for s in k))
        dump_args = []
        if args.programs:
            # A generated program runs at the one shape it was generated
            # for (the sizes its subscripts are valid at), with its inputs.
            recorded, dump_args = program_header(path)
            if recorded is None or set(recorded) != set(syms):
                ex["error"] = ex["error"] or \
                    f"no '# sizes:' line naming {', '.join(syms) or 'no symbol'} in {path}"
                recorded = {s: 1 for s in syms}
            matrix = [({s: recorded[s] for s in syms}, True)]
        else:
            matrix = shape_matrix(syms, args.quick)
        for sizes, quick in matrix:
            io_dir = os.path.join(out_dir, "io", name, dirname_of(sizes, syms))
            ex["shapes"].append({"sizes": sizes, "quick": quick, "io_dir": io_dir,
                                 "sizes_arg": ",".join(f"{s}={v}" for s, v in sizes.items())
                                 or "1", "dump_args": dump_args, "error": None})
        plan["examples"].append(ex)
    return plan


def build_all(args, nvcc, cuda_home, out_dir, plan):
    """Runs every dump-io and every example build in parallel; records the
    errors in the plan."""
    for ex in plan["examples"]:
        for shape in ex["shapes"]:
            if os.path.isdir(shape["io_dir"]):
                shutil.rmtree(shape["io_dir"])
    runtime_objects = build_runtime(args, nvcc, out_dir)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {}
        for ex in plan["examples"]:
            if ex["error"]:
                continue
            futures[pool.submit(build_example, args, nvcc, cuda_home, ex, runtime_objects)] = \
                (ex, None)
            for shape in ex["shapes"]:
                futures[pool.submit(dump_io, args, ex, shape)] = (ex, shape)
        for fut in concurrent.futures.as_completed(futures):
            ex, shape = futures[fut]
            try:
                err = fut.result()
            except Exception as e:  # a build step must not take the others down
                err = f"{type(e).__name__}: {e}"
            if shape is None:
                ex["error"] = ex["error"] or err
            else:
                shape["error"] = err


def load_prebuilt(out_dir):
    """The plan a --build-only run wrote into out_dir, its paths moved from
    the directory it was built in to out_dir (which may be a copy elsewhere);
    None where there is none."""
    try:
        with open(os.path.join(out_dir, "plan.json")) as f:
            plan = json.load(f)
    except (OSError, ValueError):
        return None
    old = plan.get("out_dir")
    if not old:
        return None

    def moved(v):
        if isinstance(v, str) and (v == old or v.startswith(old + os.sep)):
            return out_dir + v[len(old):]
        if isinstance(v, list):
            return [moved(x) for x in v]
        if isinstance(v, dict):
            return {k: moved(x) for k, x in v.items()}
        return v

    plan = moved(plan)
    plan["out_dir"] = out_dir
    return plan


# --------------------------------------------------------------------------
# Running: one worker process per example, or all of them under a sanitizer.

def load_meta(io_dir, kernel):
    with open(os.path.join(io_dir, kernel, "meta.json")) as f:
        return json.load(f)


def read_bin(io_dir, kernel, p):
    with open(os.path.join(io_dir, kernel, p["file"]), "rb") as f:
        return f.read()


def scalar_value(p, data):
    t = scalar_ctype(p["dtype"])
    if t is Half:
        return Half(struct.unpack("<H", data[:2])[0])
    return t(decode(p["dtype"], data)[0])


class KernelRunner:
    """One kernel of a loaded library: allocates, poisons, launches, compares."""

    # Guard bytes around every buffer catch stray writes just outside a
    # tensor, which cudaMalloc's granularity would hide. 256 keeps the
    # tensor as aligned as cudaMalloc's own pointers. Off under
    # compute-sanitizer, whose --padding must see those accesses itself.
    GUARD = 256
    GUARD_BYTE = 0xA5

    def __init__(self, cuda, lib, protos, kernel, guards=True):
        self.cuda, self.lib, self.protos, self.kernel = cuda, lib, protos, kernel
        self.guard = self.GUARD if guards else 0
        self.extents = {}  # tensor pointer -> (allocation, bytes)

    def launcher(self, meta):
        layout = launcher_layout(self.kernel, meta, self.protos)
        fn = getattr(self.lib, "tdsl_" + self.kernel)
        fn.restype = ctypes.c_int
        fn.argtypes = [ctype_of(c) for c, _ in self.protos["tdsl_" + self.kernel]]
        return fn, layout

    def allocate(self, io_dir, meta):
        """Device buffers: inputs uploaded, outputs poisoned. {name: pointer}."""
        ptrs = {}
        for p in meta["params"]:
            if by_value(p):
                continue
            nbytes = p["elements"] * p["element_bytes"]
            base = self.cuda.malloc(nbytes + 2 * self.guard)
            ptrs[p["name"]] = base + self.guard
            self.extents[base + self.guard] = (base, nbytes)
            if self.guard:
                self.cuda.fill(base, self.GUARD_BYTE, nbytes + 2 * self.guard)
            if p["role"] == "in":
                self.cuda.upload(ptrs[p["name"]], read_bin(io_dir, self.kernel, p))
            else:
                self.cuda.poison(ptrs[p["name"]], nbytes)
        return ptrs

    def free(self, ptrs):
        for ptr in ptrs.values():
            self.cuda.free(self.extents.pop(ptr)[0])

    def guards_intact(self, ptrs):
        """None, or which guard bytes a kernel wrote."""
        if not self.guard:
            return None
        for name, ptr in ptrs.items():
            base, nbytes = self.extents[ptr]
            for where, start in (("before", base), ("after", ptr + nbytes)):
                got = self.cuda.download(start, self.guard)
                bad = [i for i, b in enumerate(got) if b != self.GUARD_BYTE]
                if bad:
                    offset = (self.guard - bad[-1]) if where == "before" else bad[0] + 1
                    return (f"out-of-bounds write: byte {offset} {where} {name} changed "
                            f"({len(bad)} guard bytes)")
        return None

    def arguments(self, io_dir, meta, layout, ptrs, sizes=None, null=None):
        sizes = sizes if sizes is not None else [s["value"] for s in meta["sizes"]]
        args = []
        for kind, key in layout:
            if kind == "param":
                p = meta["params"][key]
                if by_value(p):
                    args.append(scalar_value(p, read_bin(io_dir, self.kernel, p)))
                else:
                    args.append(None if p["name"] == null else ptrs[p["name"]])
            elif kind == "size":
                args.append(sizes[key])
            else:
                args.append(None)  # stream 0, the legacy default stream
        return args

    def status_text(self, status):
        try:
            f = self.lib.tdsl_status_string
            f.restype, f.argtypes = ctypes.c_char_p, [ctypes.c_int]
            text = (f(status) or b"").decode()
        except AttributeError:
            text = "tdsl_status_string is missing"
        return f"{status_name(status) or status} ({text})"

    def outputs_poisoned(self, meta, ptrs):
        for p in meta["params"]:
            if p["role"] == "out":
                nbytes = p["elements"] * p["element_bytes"]
                if self.cuda.download(ptrs[p["name"]], nbytes) != b"\xff" * nbytes:
                    return p["name"]
        return None

    def run_shape(self, io_dir):
        """Returns (ok, message)."""
        meta = load_meta(io_dir, self.kernel)
        fn, layout = self.launcher(meta)
        ptrs = self.allocate(io_dir, meta)
        try:
            code = self.cuda.synchronize()
            if code:
                return False, "before the launch: " + self.cuda.error(code)
            status = fn(*self.arguments(io_dir, meta, layout, ptrs))
            code = self.cuda.synchronize()
            if status != 0:
                return False, f"launcher returned {self.status_text(status)}"
            if code:
                return False, "the kernel failed: " + self.cuda.error(code)
            ok, msg = self.check_outputs(io_dir, meta, ptrs)
            if not ok:
                return False, msg
            # The same call on the caller's workspace must compute the same.
            wok, wmsg = self.run_with_workspace(io_dir, meta, layout, ptrs)
            if not wok:
                return False, "_with_workspace: " + wmsg
            return True, msg + " " + wmsg
        finally:
            self.free(ptrs)

    def check_outputs(self, io_dir, meta, ptrs):
        """Guards, inputs unchanged, outputs within tolerance. (ok, message)."""
        stray = self.guards_intact(ptrs)
        if stray:
            return False, stray
        tol = meta["tolerance"]["value"]
        max_err = 0.0
        for p in meta["params"]:
            if by_value(p):
                continue
            nbytes = p["elements"] * p["element_bytes"]
            got = self.cuda.download(ptrs[p["name"]], nbytes)
            expected = read_bin(io_dir, self.kernel, p)
            if p["role"] == "in":
                if got != expected:
                    return False, f"the kernel changed its input {p['name']}"
                continue
            terms = None
            if "terms_file" in p:
                with open(os.path.join(io_dir, self.kernel, p["terms_file"]), "rb") as f:
                    terms = decode("f64", f.read())
            err, where = compare(p["name"], p["shape"], p["dtype"],
                                 decode(p["dtype"], expected), decode(p["dtype"], got), tol,
                                 terms)
            max_err = max(max_err, err)
            if where:
                rule = f"tol={tol:.1e}" if is_float(p["dtype"]) else "exact"
                return False, f"first mismatch {where} ({rule})"
        floats = any(is_float(p["dtype"]) for p in meta["params"] if p["role"] == "out")
        return True, f"max_err={max_err:.1e} tol={tol:.1e}" if floats else \
            f"max_err={max_err:.1e} tol=exact"

    def run_with_workspace(self, io_dir, meta, layout, ptrs):
        """tdsl_<kernel>_with_workspace on a workspace of exactly the bytes
        _workspace_size reports, poisoned, the outputs poisoned again.
        (ok, message)."""
        name, query = f"tdsl_{self.kernel}_with_workspace", f"tdsl_{self.kernel}_workspace_size"
        if name not in self.protos or query not in self.protos:
            return False, f"the header declares no {name} or {query}"
        q = getattr(self.lib, query)
        q.restype = ctypes.c_int
        q.argtypes = [ctypes.c_int64] * len(meta["sizes"]) + [ctypes.POINTER(ctypes.c_size_t)]
        nbytes = ctypes.c_size_t(0)
        status = q(*[s["value"] for s in meta["sizes"]], ctypes.byref(nbytes))
        if status != 0:
            return False, f"{query} returned {self.status_text(status)}"
        fn = getattr(self.lib, name)
        fn.restype = ctypes.c_int
        fn.argtypes = [ctype_of(c) for c, _ in self.protos[name]]
        for p in meta["params"]:
            if p["role"] == "out":
                self.cuda.poison(ptrs[p["name"]], p["elements"] * p["element_bytes"])
        workspace = self.cuda.malloc(nbytes.value) if nbytes.value else None
        try:
            if workspace:
                self.cuda.poison(workspace, nbytes.value)
            args = self.arguments(io_dir, meta, layout, ptrs)
            status = fn(*args[:-1], workspace, nbytes.value, args[-1])
            code = self.cuda.synchronize()
            if status != 0:
                return False, f"returned {self.status_text(status)}"
            if code:
                return False, "the kernel failed: " + self.cuda.error(code)
            ok, msg = self.check_outputs(io_dir, meta, ptrs)
            return ok, (f"workspace={nbytes.value}B ok" if ok else msg)
        finally:
            if workspace:
                self.cuda.free(workspace)

    def run_contract(self, io_dir):
        """NULL pointer, size 0 and the _launch_info query. (ok, message)."""
        meta = load_meta(io_dir, self.kernel)
        fn, layout = self.launcher(meta)
        ptrs = self.allocate(io_dir, meta)
        notes = []
        try:
            self.cuda.synchronize()
            tensors = [p["name"] for p in meta["params"] if not by_value(p)]
            outputs = [p["name"] for p in meta["params"] if p["role"] == "out"]
            for null in dict.fromkeys([tensors[0], outputs[0]]):
                status = fn(*self.arguments(io_dir, meta, layout, ptrs, null=null))
                if status != TDSL_ERROR_NULL_POINTER:
                    return False, (f"{null}=NULL returned {self.status_text(status)}, expected "
                                   "TDSL_ERROR_NULL_POINTER")
            notes.append("null->NULL_POINTER")
            good = [s["value"] for s in meta["sizes"]]
            for i, s in enumerate(meta["sizes"]):
                for bad in (0, -1):
                    sizes = list(good)
                    sizes[i] = bad
                    status = fn(*self.arguments(io_dir, meta, layout, ptrs, sizes=sizes))
                    if status != TDSL_ERROR_INVALID_SIZE:
                        return False, (f"{s['name']}={bad} returned {self.status_text(status)}, "
                                       "expected TDSL_ERROR_INVALID_SIZE")
            if meta["sizes"]:
                notes.append("size0->INVALID_SIZE")
            code = self.cuda.synchronize()
            if code:
                return False, "after the rejected calls: " + self.cuda.error(code)
            code = self.cuda.last_error()
            if code:
                return False, "a rejected call left a CUDA error: " + self.cuda.error(code)
            ok, msg = self.launch_info(meta)
            if not ok:
                return False, msg
            notes.append(msg)
            code = self.cuda.synchronize()
            if code:
                return False, "after _launch_info: " + self.cuda.error(code)
            touched = self.outputs_poisoned(meta, ptrs)
            if touched:
                return False, f"output {touched} was written by a call that must not launch"
            return True, " ".join(notes)
        finally:
            self.free(ptrs)

    def launch_info(self, meta):
        """Calls tdsl_<kernel>_launch_info with the shape's sizes, matching
        its parameters by type: int64_t sizes in order, a tdsl_launch_info
        pointer (room for 16), an int-like pointer for the count, an
        int-like value for the capacity."""
        name = f"tdsl_{self.kernel}_launch_info"
        if name not in self.protos:
            return False, f"the header declares no 'tdsl_status {name}(...)'"
        proto = self.protos[name]
        fn = getattr(self.lib, name)
        fn.restype = ctypes.c_int
        fn.argtypes = [ctype_of(c) for c, _ in proto]
        capacity = 64
        infos = (LaunchInfo * capacity)()
        count = None
        sizes = [s["value"] for s in meta["sizes"]]
        by_name = {s["name"]: s["value"] for s in meta["sizes"]}
        args, next_size, count_given = [], 0, False
        for ctype, pname in proto:
            base = re.sub(r"\b(const|struct)\b", "", ctype).strip()
            if "tdsl_launch_info" in base and "*" in base:
                args.append(ctypes.cast(infos, ctypes.c_void_p))
            elif "*" in base:
                count = ctype_of(base.replace("*", "").strip())(-1)
                args.append(ctypes.cast(ctypes.pointer(count), ctypes.c_void_p))
                count_given = True
            elif base == "int64_t":
                if pname in by_name:
                    args.append(by_name[pname])
                else:
                    args.append(sizes[next_size] if next_size < len(sizes) else 1)
                next_size += 1
            elif "cudaStream_t" in base:
                args.append(None)
            else:
                args.append(capacity)
        status = fn(*args)
        if status != 0:
            return False, f"{name} returned {self.status_text(status)}"
        n = 1
        if count_given:
            n = count.value
            if n < 1:
                return False, f"{name} reported {n} launches"
        parts = []
        for i in range(min(n, capacity)):
            g, b = list(infos[i].grid), list(infos[i].block)
            if min(g) < 1 or min(b) < 1 or b[0] * b[1] * b[2] > 1024:
                return False, f"{name}: launch {i} has grid {g} block {b}"
            parts.append("grid=" + "x".join(map(str, g)) + " block=" + "x".join(map(str, b)) +
                         (f" smem={infos[i].shared_bytes}" if infos[i].shared_bytes else ""))
        return True, f"launch_info {n} launch{'es' if n > 1 else ''}: " + "; ".join(parts)


def shown(ex, kernel):
    """The name a result line starts with: the kernel, or for a generated
    program (all named 'smith') its file."""
    return ex["name"] if ex.get("program") else kernel


def result_line(ok, kernel, what, msg):
    return f"{'ok' if ok else 'FAIL':4} {kernel:16} {what:30} {msg}"


def worker(args):
    """Runs the examples of plan.json (already built) and prints one line per
    kernel and shape. Exits 2 without a device."""
    out_dir = os.path.abspath(args.out)
    with open(os.path.join(out_dir, "plan.json")) as f:
        plan = json.load(f)
    cuda = HostMemory() if args.fake_device else Cuda(args.cuda_home)
    n, code = cuda.device_count()
    if code or n == 0:
        print("no CUDA device" + (f" (cudaGetDeviceCount: {cuda.error(code)})" if code else ""))
        return 2
    for ex in plan["examples"]:
        if args.only and ex["name"] not in args.only:
            continue
        shapes = [s for s in ex["shapes"] if s["quick"] or not args.quick]
        if ex["error"]:
            for k, syms in ex["kernels"].items() or [(ex["name"], [])]:
                for s in shapes:
                    print(result_line(False, shown(ex, k), label(s["sizes"], syms), ex["error"]), flush=True)
            continue
        lib = ctypes.CDLL(ex["lib"])
        with open(ex["header"]) as f:
            protos = parse_prototypes(f.read())
        for k, syms in ex["kernels"].items():
            runner = KernelRunner(cuda, lib, protos, k, guards=not args.no_guards)
            for i, s in enumerate(shapes):
                what = label(s["sizes"], syms)
                if s["error"]:
                    ok, msg = False, s["error"]
                else:
                    try:
                        ok, msg = runner.run_shape(s["io_dir"])
                    except (RuntimeError, ValueError, OSError) as e:
                        ok, msg = False, str(e)
                print(result_line(ok, shown(ex, k), what, msg), flush=True)
            contract = next((s for s in shapes if not s["error"] and
                             all(v == 7 for v in s["sizes"].values())), None)
            if contract:
                try:
                    ok, msg = runner.run_contract(contract["io_dir"])
                except (RuntimeError, ValueError, OSError) as e:
                    ok, msg = False, str(e)
                print(result_line(ok, shown(ex, k), "contract", msg), flush=True)
    # Leak checking happens at context teardown.
    cuda.reset()
    return 0


def expected_lines(ex, quick):
    shapes = [s for s in ex["shapes"] if s["quick"] or not quick]
    kernels = max(1, len(ex["kernels"]))
    contract = any(all(v == 7 for v in s["sizes"].values()) for s in shapes) and not ex["error"]
    return kernels * (len(shapes) + (1 if contract else 0))


def run_worker(args, out_dir, ex_names, quick, prefix, log_path, timeout=None, guards=True):
    """Runs `gpu_check.py --worker` (under prefix, e.g. compute-sanitizer)
    and returns (rc, stdout+stderr); rc is None when it ran out of time."""
    cmd = [*prefix, sys.executable, os.path.abspath(__file__), "--worker", "--out", out_dir,
           "--cuda-home", args.cuda_home]
    if args.fake_device:
        cmd.append("--fake-device")
    if not guards:
        cmd.append("--no-guards")
    if quick:
        cmd.append("--quick")
    for name in ex_names:
        cmd += ["--only", name]
    start = time.time()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        rc, text = out.returncode, out.stdout + out.stderr
    except subprocess.TimeoutExpired as e:
        def as_text(b):
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        rc, text = None, as_text(e.stdout) + as_text(e.stderr) + f"\n[timed out after {timeout} s]"
    with open(log_path, "w") as f:
        f.write("$ " + " ".join(cmd) + "\n" + text + f"\n[exit {rc}, "
                f"{time.time() - start:.1f} s]\n")
    return rc, text


def sanitizer_errors(text):
    """(summary lines, error count) from a compute-sanitizer log: memcheck,
    initcheck and synccheck end with "ERROR SUMMARY: N errors", racecheck
    with "RACECHECK SUMMARY: H hazards displayed (E errors, W warnings)"
    (read only where there is no ERROR SUMMARY, which would count them
    again)."""
    found = {"error": [], "race": []}
    for l in text.splitlines():
        m = re.search(r"ERROR SUMMARY: (\d+) error", l)
        r = re.search(r"RACECHECK SUMMARY: .*\((\d+) errors?, \d+ warnings?\)", l)
        if m or r:
            found["error" if m else "race"].append((l.lstrip("= ").strip(), int((m or r).group(1))))
    chosen = found["error"] or found["race"]
    return [l for l, _ in chosen], sum(n for _, n in chosen)


def run_key(line):
    """(kernel, shape) of a result line."""
    return tuple(line[4:].split()[:2])


def sanitize(args, out_dir, plan, tally):
    """Reruns the quick shapes and the contract checks under each
    compute-sanitizer tool: one process per tool and example (a fault in one
    example leaves the others' results intact), several side by side.
    Prints one line per tool."""
    sanitizer = find_sanitizer(args.cuda_home, args.sanitizer)
    if not sanitizer:
        for tool, _ in SANITIZER_TOOLS:
            tally.emit(f"FAIL sanitize {tool:10} compute-sanitizer not found")
        return
    jobs = []
    for tool, flags in SANITIZER_TOOLS:
        os.makedirs(os.path.join(out_dir, "sanitize", tool), exist_ok=True)
        prefix = [sanitizer, *flags, "--target-processes", "all", "--print-limit", "20"]
        for ex in plan["examples"]:
            log_path = os.path.join(out_dir, "sanitize", tool, ex["name"] + ".log")
            jobs.append((tool, ex, prefix, log_path))
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.sanitize_jobs) as pool:
        results = list(pool.map(
            lambda j: run_worker(args, out_dir, [j[1]["name"]], True, j[2], j[3],
                                 args.sanitize_timeout, guards=False), jobs))
    for tool, _ in SANITIZER_TOOLS:
        errors, summaries, problems, runs, passed, total = 0, set(), [], 0, 0, 0
        for (t, ex, _, log_path), (rc, text) in zip(jobs, results):
            if t != tool:
                continue
            summary, n = sanitizer_errors(text)
            lines = [l for l in text.splitlines() if l.startswith(("ok ", "FAIL"))]
            fails = [l for l in lines if l.startswith("FAIL")]
            # A run failing here that passed without the tool is the tool's
            # finding; failures of the main pass are counted there.
            new_fails = [l for l in fails if run_key(l) not in tally.failed_keys]
            expected = expected_lines(ex, True)
            errors += n
            summaries.update(summary)
            runs += len(lines)
            passed += len(lines) - len(fails)
            total += expected
            where = os.path.relpath(log_path, out_dir)
            if rc is None:
                problems.append(f"{ex['name']}: timed out after {args.sanitize_timeout} s [{where}]")
            elif not summary:
                problems.append(f"{ex['name']}: no ERROR SUMMARY line (exit {rc}) [{where}]")
            elif n or rc != 0 or new_fails or len(lines) != expected:
                problems.append(f"{ex['name']}: {'; '.join(summary)}, exit {rc}, "
                                f"{len(lines) - len(fails)}/{expected} runs passed [{where}]")
            for l in new_fails[:3]:
                problems.append(f"  under {tool}: {l}")
        what = "; ".join(sorted(summaries)) if len(summaries) == 1 and not errors else \
            f"{errors} errors"
        tally.emit(f"{'FAIL' if problems else 'ok':4} sanitize {tool:10} {what} "
                   f"({len(plan['examples'])} examples, {passed}/{total} runs passed)  "
                   f"[{os.path.join(out_dir, 'sanitize', tool)}]")
        for p in problems:
            print("     " + p, flush=True)
    print(f"# sanitizers: {time.time() - t0:.0f} s", flush=True)


class Tally:
    def __init__(self, log):
        self.passed = self.failed = 0
        self.failed_keys = set()
        self.log = log

    def emit(self, line):
        print(line, flush=True)
        self.log.write(line + "\n")
        self.log.flush()
        if line.startswith("ok "):
            self.passed += 1
        elif line.startswith("FAIL"):
            self.failed += 1
            self.failed_keys.add(run_key(line))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tdslc", default=os.path.join(REPO, "build", "bin", "tdslc"))
    ap.add_argument("--examples", default=os.path.join(REPO, "dsl", "examples"))
    ap.add_argument("--programs", default=None, metavar="DIR",
                    help="instead of the examples, the .tdsl files of DIR written by "
                         "tdsl-smith --emit-dir, each at the sizes of its '# sizes:' line")
    ap.add_argument("--out", default=os.path.join(REPO, "build", "gpu-check"))
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--quick", action="store_true", help="only the small shapes (1, 7, 33)")
    ap.add_argument("--index64", action="store_true",
                    help="build with -DTDSL_ALWAYS_INDEX64: the 64-bit-index kernels at every size")
    ap.add_argument("--sanitize", action="store_true",
                    help="also rerun the quick shapes under compute-sanitizer's tools")
    ap.add_argument("--sanitize-timeout", type=int, default=240,
                    help="seconds one example may take under one tool (default 240)")
    ap.add_argument("--sanitize-jobs", type=int, default=8,
                    help="sanitizer processes side by side (default 8)")
    ap.add_argument("--build-only", action="store_true",
                    help="dump, emit, compile and load every library; no device needed")
    ap.add_argument("--prebuilt", action="store_true",
                    help="run what a --build-only run left in --out (carried from a machine "
                         "without a GPU, under any path): no tdslc, nvcc or reference dumps")
    ap.add_argument("--only", action="append", default=[], metavar="EXAMPLE",
                    help="run only this example (repeatable; file name without .tdsl)")
    ap.add_argument("--jobs", type=int, default=min(os.cpu_count() or 2, 12))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--nvcc", default=None)
    ap.add_argument("--sanitizer", default=None,
                    help="compute-sanitizer to use (default: CUDA's bin/, then PATH)")
    ap.add_argument("--cuda-home", default=None)
    ap.add_argument("--runtime-src", default=os.path.join(REPO, "runtime", "src"))
    ap.add_argument("--runtime-include", default=os.path.join(REPO, "runtime", "include"))
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    # Tests the harness itself: launchers that compute on the host, buffers
    # in host memory.
    ap.add_argument("--fake-device", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--no-guards", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    nvcc = find_nvcc(args.nvcc)
    if args.cuda_home is None:
        args.cuda_home = _toolchain.cuda_home(nvcc) if os.path.exists(nvcc) else \
            _toolchain.DEFAULT_CUDA_HOME
    if args.worker:
        return worker(args)

    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    args.tdslc = os.path.abspath(args.tdslc)
    if not os.path.exists(args.tdslc):
        print(f"error: no tdslc at {args.tdslc} (build it, or pass --tdslc)")
        return 1
    start = time.time()

    if not args.build_only and not args.fake_device:
        try:
            cuda = Cuda(args.cuda_home)
        except RuntimeError as e:
            print(f"no CUDA device: {e}")
            return 2
        n, code = cuda.device_count()
        if code or n == 0:
            print("no CUDA device" + (f" (cudaGetDeviceCount: {cuda.error(code)})"
                                      if code else " (cudaGetDeviceCount found 0)"))
            return 2

    log = open(os.path.join(out_dir, "check.log"), "w")
    tally = Tally(log)
    if args.prebuilt:
        plan = load_prebuilt(out_dir)
        if plan is None:
            print(f"error: no plan.json of a --build-only run in {out_dir}")
            return 1
    else:
        plan = make_plan(args, out_dir)
        try:
            build_all(args, nvcc, args.cuda_home, out_dir, plan)
        except RuntimeError as e:
            tally.emit(f"FAIL build: {e}")
            print(f"{tally.passed} passed, {tally.failed} failed")
            return 1
        plan["out_dir"] = out_dir
    with open(os.path.join(out_dir, "plan.json"), "w") as f:
        json.dump(plan, f, indent=1)
    print(f"# built {len(plan['examples'])} examples, "
          f"{sum(len(e['shapes']) for e in plan['examples'])} shapes dumped in "
          f"{time.time() - start:.0f} s; logs under {out_dir}", flush=True)

    if args.build_only:
        # Load each library and match every launcher with its meta.json:
        # all that can be checked without a device.
        Cuda(args.cuda_home)
        for ex in plan["examples"]:
            for k, syms in ex["kernels"].items():
                if ex["error"]:
                    tally.emit(result_line(False, shown(ex, k), "build", ex["error"]))
                    continue
                try:
                    lib = ctypes.CDLL(ex["lib"])
                    with open(ex["header"]) as f:
                        protos = parse_prototypes(f.read())
                    for name in ("tdsl_" + k, f"tdsl_{k}_launch_info", "tdsl_status_string"):
                        getattr(lib, name)
                    bad = [s for s in ex["shapes"] if s["error"]]
                    if bad:
                        raise RuntimeError(bad[0]["error"])
                    for s in ex["shapes"]:
                        launcher_layout(k, load_meta(s["io_dir"], k), protos)
                    tally.emit(result_line(True, shown(ex, k), "build",
                                           f"{len(ex['shapes'])} shapes dumped, library loads"))
                except (OSError, AttributeError, RuntimeError, ValueError) as e:
                    tally.emit(result_line(False, shown(ex, k), "build", str(e)))
        line = f"{tally.passed} passed, {tally.failed} failed"
        tally.emit(line)
        return 0 if tally.failed == 0 else 1

    # One worker per example, a few at a time: a crash takes one example down.
    runs_dir = os.path.join(out_dir, "runs")
    os.makedirs(runs_dir, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        futures = [(ex, pool.submit(run_worker, args, out_dir, [ex["name"]], args.quick, [],
                                    os.path.join(runs_dir, ex["name"] + ".log")))
                   for ex in plan["examples"]]
        for ex, fut in futures:
            rc, text = fut.result()
            lines = [l for l in text.splitlines() if l.startswith(("ok ", "FAIL"))]
            for l in lines:
                tally.emit(l)
            missing = expected_lines(ex, args.quick) - len(lines)
            if rc == 2 and "no CUDA device" in text:
                tally.emit(f"FAIL {ex['name']:16} no CUDA device in the worker")
            elif rc != 0 or missing > 0:
                tally.emit(f"FAIL {ex['name']:16} worker exited {rc} with {max(missing, 0)} "
                           f"results missing: see {os.path.join(runs_dir, ex['name'] + '.log')}")

    if args.sanitize:
        sanitize(args, out_dir, plan, tally)

    tally.emit(f"{tally.passed} passed, {tally.failed} failed")
    print(f"# {time.time() - start:.0f} s", flush=True)
    return 0 if tally.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
