"""Kernels as torch custom ops (torch.library), so that torch.compile traces
a call as one opaque node instead of breaking the graph at ctypes. The fake
implementation allocates the outputs from the same size inference and
argument checks as a real call, on fake tensors."""
import torch

from ._kernel import check_call, empty_outputs
from ._signature import FLOAT_DTYPES

# One library fragment for every op of the process; ops by name, so that a
# module compiled twice registers its kernels once.
_LIBRARY = None
_OPS = {}


def register(kernel):
    global _LIBRARY
    sig = kernel.signature
    name = f"{sig.name}_{kernel.module.key[:12]}"
    if name in _OPS:
        return _OPS[name]
    if _LIBRARY is None:
        _LIBRARY = torch.library.Library("tdsl", "FRAGMENT")
    # Sizes the inputs cannot give (only in outputs) become int arguments.
    extra = sig.undetermined_by_inputs()
    params = [("float " if p.dtype in FLOAT_DTYPES else "int ") + p.name if p.is_scalar
              else "Tensor " + p.name for p in sig.inputs] + [f"int {s}" for s in extra]
    returns = "Tensor" if len(sig.outputs) == 1 else \
        "(" + ", ".join("Tensor" for _ in sig.outputs) + ")"
    _LIBRARY.define(f"{name}({', '.join(params)}) -> {returns}")
    n = len(sig.inputs)

    def real(*args):
        return kernel(*args[:n], **dict(zip(extra, args[n:])))

    def fake(*args):
        _, checked, _, sizes = check_call(sig, torch, args[:n], None,
                                          dict(zip(extra, args[n:])), fake=True)
        device = next((a.obj.device for _, a in checked), None)
        outs = empty_outputs(torch, sig, sizes, device)
        return outs[0] if len(outs) == 1 else tuple(outs)

    _LIBRARY.impl(name, real, "CUDA")
    register_fake = getattr(torch.library, "register_fake", None) or torch.library.impl_abstract
    register_fake(f"tdsl::{name}", fake, lib=_LIBRARY)
    _OPS[name] = getattr(torch.ops.tdsl, name).default
    return _OPS[name]
