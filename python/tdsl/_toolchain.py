"""Where tdslc, nvcc, the runtime and the cache are, and how a .tdsl source
becomes a cached shared library: tdslc --emit=signature and --emit=cuda,
then nvcc -shared with the runtime archive. A cache hit runs neither."""
import ctypes
import glob
import hashlib
import json
import os
import shutil
import subprocess
import tempfile

from ._errors import CompileError, TdslError

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# `pip install` puts tdslc, the runtime headers and archive here, laid out
# as an install prefix so that tdslc finds the headers beside itself.
BUNDLED_PREFIX = os.path.join(PACKAGE_DIR, "_prefix")
# python/tdsl -> the repository, for PYTHONPATH=python use beside a build.
REPO_BUILD_TDSLC = os.path.join(os.path.dirname(os.path.dirname(PACKAGE_DIR)),
                                "build", "bin", "tdslc")
# Bumped when the layout of a cache entry or the nvcc command changes.
CACHE_FORMAT = 1
# Where tdslc's rule looks for nvcc last.
DEFAULT_CUDA_HOME = "/usr/local/cuda"
DEFAULT_NVCC = os.path.join(DEFAULT_CUDA_HOME, "bin", "nvcc")


def find_tdslc():
    """$TDSL_TDSLC, then the tdslc pip bundled, then the repository's
    build/bin/tdslc, then tdslc on PATH."""
    env = os.environ.get("TDSL_TDSLC")
    if env:
        if not os.access(env, os.X_OK):
            raise TdslError(f"TDSL_TDSLC={env} is not an executable tdslc")
        return os.path.abspath(env)
    candidates = [os.path.join(BUNDLED_PREFIX, "bin", "tdslc"), REPO_BUILD_TDSLC]
    for c in candidates:
        if os.access(c, os.X_OK):
            return c
    on_path = shutil.which("tdslc")
    if on_path:
        return os.path.abspath(on_path)
    raise TdslError("tdslc not found: set TDSL_TDSLC, install the package with pip (which "
                    "bundles it), or build it (cmake --build build); looked in " +
                    ", ".join(candidates) + " and PATH")


def find_nvcc():
    """tdslc's rule: $CUDACXX, then nvcc on PATH, then /usr/local/cuda. The
    one copy of it in Python: bench/ and test/gpu/ import it."""
    env = os.environ.get("CUDACXX")
    if env:
        found = env if os.path.exists(env) else shutil.which(env)
        if not found:
            raise TdslError(f"CUDACXX={env}: no such nvcc")
        return found
    found = shutil.which("nvcc") or DEFAULT_NVCC
    if not os.access(found, os.X_OK):
        raise TdslError("nvcc not found (set CUDACXX, put nvcc on PATH or install the CUDA "
                        "toolkit in /usr/local/cuda)")
    return found


def cuda_home(nvcc):
    """The toolkit nvcc belongs to: <home>/bin/nvcc, links resolved."""
    return os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))


def cuda_lib_dir(home):
    """Where toolkit `home` keeps libcudart.so."""
    return os.path.join(home, "lib64")


def cudart_link_flags(home):
    """nvcc's flags to link the shared libcudart of toolkit `home` and find
    it at run time without LD_LIBRARY_PATH."""
    return ["-cudart", "shared", f"-Xlinker=-rpath,{cuda_lib_dir(home)}"]


def runtime_archive(tdslc):
    """libtdsl_runtime.a beside tdslc's prefix: build/bin/tdslc ->
    build/lib, <prefix>/bin/tdslc -> <prefix>/lib (cmake --install, pip)."""
    path = os.path.join(os.path.dirname(os.path.dirname(tdslc)), "lib", "libtdsl_runtime.a")
    if not os.path.exists(path):
        raise TdslError(f"the tdsl runtime {path} is missing: build it with tdslc "
                        "(cmake --build build builds both where the CUDA toolkit is found)")
    return path


def cache_root(override=None):
    """The argument, else $TDSL_CACHE_DIR, else $XDG_CACHE_HOME/tdsl, else
    ~/.cache/tdsl (the XDG base directory convention)."""
    if override:
        return os.path.abspath(override)
    if os.environ.get("TDSL_CACHE_DIR"):
        return os.path.abspath(os.environ["TDSL_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "tdsl")


_memo = {}


def _memoized(kind, path, compute):
    """compute(path), remembered while the file keeps its size and mtime:
    a rebuilt tdslc gets a new key without a process restart."""
    st = os.stat(path)
    key = (kind, path, st.st_size, st.st_mtime_ns)
    if key not in _memo:
        _memo[key] = compute(path)
    return _memo[key]


def file_digest(path):
    def digest(p):
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()
    return _memoized("digest", path, digest)


def tdslc_version(tdslc):
    return _memoized("version", tdslc, lambda p: run([p, "--version"], "tdslc").strip())


def tdslc_include_dir(tdslc):
    return _memoized("include", tdslc,
                     lambda p: run([p, "--print-include-dir"], "tdslc").strip())


def run(cmd, what, stdin=None, rewrite=None):
    """cmd's stdout; a CompileError with its output if it fails. rewrite
    maps the cache's copy of a source back to the user's path in messages."""
    try:
        out = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    except OSError as e:
        raise CompileError(f"cannot run {what} ({cmd[0]}): {e}") from None
    if out.returncode != 0:
        msg = (out.stderr + out.stdout).strip()
        for old, new in (rewrite or {}).items():
            msg = msg.replace(old, new)
        raise CompileError(f"{what} failed (exit {out.returncode}):\n{msg}")
    return out.stdout


def normalize_arch(arch):
    """'sm_90' from 'sm_90', '90', 90, (9, 0) or 'sm_90a'; None reads the
    current device."""
    if arch is None:
        major, minor = device_capability()
        return f"sm_{major}{minor}"
    if isinstance(arch, tuple):
        return f"sm_{arch[0]}{arch[1]}"
    text = str(arch)
    return text if text.startswith("sm_") else "sm_" + text


def device_capability():
    """The current device's compute capability: through torch when it is
    already imported (its current device), else through cudart."""
    import sys
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return torch.cuda.get_device_capability()
    cudart = load_cudart()
    dev, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    # cudaDevAttrComputeCapabilityMajor = 75, ...Minor = 76.
    if cudart is None or cudart.cudaGetDevice(ctypes.byref(dev)) != 0 or \
            cudart.cudaDeviceGetAttribute(ctypes.byref(major), 75, dev) != 0 or \
            cudart.cudaDeviceGetAttribute(ctypes.byref(minor), 76, dev) != 0:
        raise TdslError("arch=None reads the current CUDA device's compute capability, and "
                        "there is no device here: pass arch='sm_90' (or the target's)")
    return major.value, minor.value


def load_cudart():
    """libcudart.so of the toolkit nvcc belongs to, else the loader's; None
    if there is none."""
    candidates = []
    try:
        lib_dir = cuda_lib_dir(cuda_home(find_nvcc()))
        candidates += sorted(glob.glob(os.path.join(lib_dir, "libcudart.so*")))
    except TdslError:
        pass
    for c in candidates + ["libcudart.so", "libcudart.so.13", "libcudart.so.12"]:
        try:
            return ctypes.CDLL(c)
        except OSError:
            continue
    return None


def tdslc_flags(opt, schedule, flags):
    """The tdslc options of a compile (the arch aside), in a fixed order."""
    if opt not in (0, 1, 2, 3):
        raise TdslError(f"opt={opt!r}: expected 0, 1, 2 or 3")
    out = [f"-O{opt}"]
    if isinstance(schedule, dict):
        schedule = [f"{k}={schedule_value(v)}" for k, v in schedule.items()]
    out += [f"--schedule={s}" for s in (schedule or ())]
    for f in flags:
        if f.startswith(("-O", "--arch", "-o", "--emit", "--header")):
            raise TdslError(f"flag {f!r}: pass opt= and arch= instead; tdsl.compile chooses "
                            "the outputs")
    return out + list(flags)


def schedule_value(v):
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(str(x) for x in v) + "]"
    return str(v)


class Entry:
    """One cache entry: the source, the CUDA, the header, the signature and
    the library of one (source, tdslc, arch, flags)."""

    def __init__(self, root, key, stem):
        self.dir = os.path.join(root, key)
        self.key, self.stem = key, stem

    def path(self, suffix):
        return os.path.join(self.dir, self.stem + suffix)

    @property
    def library(self):
        return os.path.join(self.dir, "lib" + self.stem + ".so")

    def complete(self):
        return os.path.exists(self.library) and os.path.exists(self.path(".signature.json"))


def build(source, stem, user_path, arch, opt, schedule, flags, cache_dir):
    """The cache entry of this compile, built unless it is there already.
    Returns (entry, hit)."""
    tdslc = find_tdslc()
    options = tdslc_flags(opt, schedule, flags)
    runtime = runtime_archive(tdslc)
    key_parts = {"format": CACHE_FORMAT, "source": hashlib.sha256(source.encode()).hexdigest(),
                 "tdslc": tdslc_version(tdslc), "tdslc_binary": file_digest(tdslc),
                 "runtime": file_digest(runtime), "arch": arch, "flags": options}
    key = hashlib.sha256(json.dumps(key_parts, sort_keys=True).encode()).hexdigest()[:24]
    root = cache_root(cache_dir)
    entry = Entry(root, key, stem)
    if entry.complete():
        return entry, True
    os.makedirs(root, exist_ok=True)
    if os.path.isdir(entry.dir):
        shutil.rmtree(entry.dir, ignore_errors=True)  # a half entry of an older layout
    # Built aside and renamed into place, so that a concurrent compile or an
    # interrupted one never leaves a half entry under the key.
    tmp = tempfile.mkdtemp(prefix=".build-", dir=root)
    try:
        staged = Entry(root, os.path.basename(tmp), stem)
        src = staged.path(".tdsl")
        with open(src, "w") as f:
            f.write(source)
        rewrite = {src: user_path}
        base = [tdslc, src, f"--arch={arch}", *options]
        # The same options as the CUDA: a --symbol-prefix names the launchers
        # the signature gives.
        run(base + ["--emit=signature", "-o", staged.path(".signature.json")], "tdslc",
            rewrite=rewrite)
        run(base + ["--emit=cuda", "-o", staged.path(".cu"), f"--header={staged.path('.h')}"],
            "tdslc", rewrite=rewrite)
        nvcc = find_nvcc()
        run([nvcc, "-shared", "-O2", "-std=c++17", "-lineinfo", "-Xcompiler", "-fPIC",
             f"-arch={arch}", "-I", tdslc_include_dir(tdslc), staged.path(".cu"), runtime,
             *cudart_link_flags(cuda_home(nvcc)), "-o", staged.library], "nvcc")
        with open(os.path.join(tmp, "key.json"), "w") as f:
            json.dump(dict(key_parts, tdslc_path=tdslc), f, indent=1, sort_keys=True)
        try:
            os.rename(tmp, entry.dir)
        except OSError:
            # Another process finished the same entry first: keep theirs.
            if not entry.complete():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return entry, False


def report(entry, arch, opt, schedule, flags):
    """tdslc --emit=report of an entry (it runs ptxas), kept beside it."""
    path = os.path.join(entry.dir, entry.stem + ".report.txt")
    if not os.path.exists(path):
        tdslc = find_tdslc()
        text = run([tdslc, entry.path(".tdsl"), "--emit=report", f"--arch={arch}",
                    *tdslc_flags(opt, schedule, flags)], "tdslc --emit=report")
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
    with open(path) as f:
        return f.read()
