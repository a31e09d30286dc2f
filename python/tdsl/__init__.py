"""tdsl: compile .tdsl kernels and call them on torch tensors.

    import torch, tdsl
    mod = tdsl.compile("dsl/examples/softmax.tdsl")   # tdslc + nvcc, cached on disk
    Y = mod.softmax(torch.randn(33, 1000, device="cuda", dtype=torch.float16))

Sizes come from the tensors' shapes, outputs are allocated on the inputs'
device (or passed with out=), and the kernel runs on torch's current stream.
See python/README.md for the whole interface.
"""
import ctypes
import os

from . import _toolchain
from ._errors import ArgumentError, CompileError, LaunchError, TdslError
from ._kernel import Kernel
from ._signature import Signature, parse_signatures

__all__ = ["compile", "Module", "Kernel", "Signature", "TdslError", "CompileError",
           "ArgumentError", "LaunchError", "cache_dir", "find_tdslc"]
__version__ = "0.1.0"

cache_dir = _toolchain.cache_root
find_tdslc = _toolchain.find_tdslc


def compile(path_or_source, arch=None, schedule=None, opt=2, *, flags=(), cache_dir=None):
    """Compiles a .tdsl file (a path) or source text into a Module.

    path_or_source: a path (str or os.PathLike), or the text of a .tdsl
        source (a str holding a newline or a '{').
    arch: 'sm_90', '90', (9, 0) or 'sm_90a'; None takes the current CUDA
        device's compute capability.
    schedule: schedule knobs pinned in every kernel (tdslc --schedule), a
        dict {'block_tile': [64, 64], 'tensor_cores': False} or a list of
        'key=value' strings.
    opt: tdslc's -O level, 0 to 3.
    flags: further tdslc options (e.g. ['--disable-pass=unroll']).
    cache_dir: where compiled libraries are kept; default $TDSL_CACHE_DIR,
        else $XDG_CACHE_HOME/tdsl, else ~/.cache/tdsl. The key is the
        source, tdslc's version and binary, the runtime, the arch and the
        flags: a hit runs neither tdslc's code generation nor nvcc.
    """
    source, stem, user_path = _read_source(path_or_source)
    arch = _toolchain.normalize_arch(arch)
    entry, hit = _toolchain.build(source, stem, user_path, arch, opt, schedule, list(flags),
                                  cache_dir)
    return Module(entry, hit, arch, (opt, schedule, list(flags)))


def _read_source(path_or_source):
    """(text, file stem, the name diagnostics should show)."""
    if isinstance(path_or_source, os.PathLike) or (
            isinstance(path_or_source, str) and "\n" not in path_or_source
            and "{" not in path_or_source):
        path = os.fspath(path_or_source)
        try:
            with open(path) as f:
                text = f.read()
        except OSError as e:
            raise TdslError(f"cannot read {path}: {e.strerror}") from None
        stem = os.path.splitext(os.path.basename(path))[0] or "kernels"
        return text, _c_stem(stem), path
    if not isinstance(path_or_source, str):
        raise TypeError(f"tdsl.compile takes a path or .tdsl source text, got "
                        f"{type(path_or_source).__name__}")
    return path_or_source, "kernels", "<source>"


def _c_stem(stem):
    """A file stem safe in the cache's file names."""
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in stem) or "kernels"


class Module:
    """A compiled .tdsl file: one callable per kernel (mod.softmax, or
    mod["softmax"] where a kernel's name is one of the attributes below).

    source: the CUDA tdslc wrote; header: its C header; report: the
    --emit=report table (runs ptxas the first time); library: the shared
    library's path; key: the cache key; cache_hit: whether compile found it
    cached; kernels: {name: Kernel}."""

    def __init__(self, entry, cache_hit, arch, options):
        self._entry, self._options = entry, options
        self.key, self.cache_hit, self.arch = entry.key, cache_hit, arch
        self.library = entry.library
        with open(entry.path(".signature.json")) as f:
            self.tdslc_version, sigs = parse_signatures(f.read())
        self._lib = ctypes.CDLL(entry.library)
        self.kernels = {s.name: Kernel(self, s, self._lib) for s in sigs}

    def __getattr__(self, name):
        kernels = self.__dict__.get("kernels", {})
        if name in kernels:
            return kernels[name]
        raise AttributeError(f"tdsl module has no kernel '{name}' (kernels: "
                             f"{', '.join(kernels) or 'none'})")

    def __getitem__(self, name):
        return self.kernels[name]

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.kernels))

    def __repr__(self):
        return f"<tdsl module {self._entry.stem} ({self.arch}): {', '.join(self.kernels)}>"

    @property
    def source(self):
        with open(self._entry.path(".cu")) as f:
            return f.read()

    @property
    def header(self):
        with open(self._entry.path(".h")) as f:
            return f.read()

    @property
    def report(self):
        return _toolchain.report(self._entry, self.arch, *self._options)
