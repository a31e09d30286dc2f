"""One kernel of a compiled module as a Python callable: checks every
argument against the signature (before anything is launched), solves the
sizes from the shapes, allocates the outputs and the workspace through
torch, and calls the _with_workspace launcher through ctypes on torch's
current stream. A call whose tensors have the dtypes, shapes, strides and
devices of an earlier one reuses what those decided (a CallPlan) and
checks only the rest."""
import ctypes
import numbers
import struct
import sys

from ._abi import CUDA_STATUSES, Half, LaunchInfo, status_name
from ._errors import ArgumentError, LaunchError
from ._signature import FLOAT_DTYPES, INT_RANGES

TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64",
                "i8": "int8", "i32": "int32"}
# __cuda_array_interface__ typestrs without the byte order; bfloat16 has none.
CAI_TYPESTRS = {"f32": "f4", "f16": "f2", "f64": "f8", "i8": "i1", "i32": "i4"}
# What the _with_workspace launchers require of the workspace (README).
WORKSPACE_ALIGNMENT = 256
# CallPlans a kernel keeps before it starts over: a bound for callers whose
# shapes never repeat.
CALL_PLANS = 256

SCALAR_CTYPES = {"f32": ctypes.c_float, "f64": ctypes.c_double, "i8": ctypes.c_int8,
                 "i32": ctypes.c_int32, "f16": Half, "bf16": Half}


def half_bits(dtype, value):
    """The 16 bits of value in f16 or bf16, rounded to nearest even."""
    if dtype == "f16":
        return struct.unpack("<H", struct.pack("<e", value))[0]
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    if value != value:
        return 0x7FC0
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


class Arg:
    """A tensor argument as the checks left it."""
    __slots__ = ("ptr", "shape", "nbytes", "device", "stream", "obj")

    def __init__(self, ptr, shape, nbytes, device, stream, obj):
        self.ptr, self.shape, self.nbytes = ptr, shape, nbytes
        self.device, self.stream, self.obj = device, stream, obj


def torch_dtype(torch, dtype):
    return getattr(torch, TORCH_DTYPES[dtype])


def contiguous_strides(shape, itemsize):
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def check_tensor(sig, p, v, torch, memory=True):
    """The Arg for v as parameter p, or an ArgumentError saying what does
    not fit. memory=False (torch's fake tensors) skips the pointer checks."""
    if torch is not None and isinstance(v, torch.Tensor):
        if v.device.type != "cuda" and memory:
            sig.fail(p.name, f"wrong device: expected a CUDA tensor, got one on {v.device}")
        expected = torch_dtype(torch, p.dtype)
        if v.dtype != expected:
            sig.fail(p.name, f"wrong dtype: expected {p.dtype} ({expected}), got {v.dtype}")
        shape = tuple(v.shape)
        check_rank(sig, p, shape)
        if not v.is_contiguous():
            sig.fail(p.name, f"non-contiguous: expected a dense row-major tensor, got strides "
                             f"{tuple(v.stride())} for shape {shape} (call .contiguous())")
        if not memory:
            return Arg(0, shape, 0, v.device, None, v)
        arg = Arg(v.data_ptr(), shape, v.numel() * p.element_bytes, v.device.index, None, v)
        check_pointer(sig, p, arg.ptr, arg.nbytes)
        return arg
    cai = getattr(v, "__cuda_array_interface__", None)
    if cai is not None:
        return check_cai(sig, p, v, cai)
    if hasattr(v, "__dlpack__"):
        if torch is None:
            try:
                import torch
            except ImportError:
                sig.fail(p.name, f"{type(v).__name__} has DLPack but no "
                                 "__cuda_array_interface__; reading DLPack takes torch")
        return check_tensor(sig, p, torch.from_dlpack(v), torch, memory)
    if hasattr(v, "__array_interface__") or hasattr(v, "__array__"):
        sig.fail(p.name, f"wrong device: expected CUDA memory, got host memory "
                         f"({type(v).__name__})")
    if p.is_input and p.rank == 0:
        sig.fail(p.name, "expected a Python number")
    sig.fail(p.name, f"expected a CUDA tensor {p.dtype}{p.shape_text()} (torch.Tensor, or an "
                     f"object with __cuda_array_interface__ or __dlpack__), got "
                     f"{type(v).__name__}")


def check_rank(sig, p, shape):
    if len(shape) != p.rank:
        sig.fail(p.name, f"rank mismatch: expected rank {p.rank} ({p.dtype}{p.shape_text()}), "
                         f"got shape {tuple(shape)}")


def check_cai(sig, p, v, cai):
    typestr = cai.get("typestr", "")
    expected = CAI_TYPESTRS.get(p.dtype)
    if expected is None:
        sig.fail(p.name, f"wrong dtype: {p.dtype} has no __cuda_array_interface__ typestr; "
                         "pass a torch tensor")
    if typestr[1:] != expected or typestr[:1] not in "<|=":
        sig.fail(p.name, f"wrong dtype: expected {p.dtype} (typestr '<{expected}'), got "
                         f"'{typestr}'")
    shape = tuple(cai["shape"])
    check_rank(sig, p, shape)
    strides = cai.get("strides")
    if strides is not None and any(
            s != c for s, c, e in zip(strides, contiguous_strides(shape, p.element_bytes), shape)
            if e > 1):
        sig.fail(p.name, f"non-contiguous: expected a dense row-major array, got strides "
                         f"{tuple(strides)} bytes for shape {shape}")
    ptr, readonly = cai["data"]
    if readonly and not p.is_input:
        sig.fail(p.name, "read-only: an output must be writable")
    elements = 1
    for e in shape:
        elements *= e
    arg = Arg(ptr or 0, shape, elements * p.element_bytes, None, cai.get("stream"), v)
    check_pointer(sig, p, arg.ptr, arg.nbytes)
    return arg


def check_pointer(sig, p, ptr, nbytes):
    if ptr == 0 and nbytes:
        sig.fail(p.name, "null data pointer")
    if ptr % p.element_bytes:
        sig.fail(p.name, f"misaligned: the data pointer {ptr:#x} is not a multiple of "
                         f"{p.element_bytes} bytes, the alignment of {p.dtype}")


def check_scalar(sig, p, v):
    """The ctypes value of scalar parameter p: a Python number, never a
    tensor (reading one would synchronize the device)."""
    if type(v) is not float and type(v) is not int and (
            isinstance(v, bool) or not isinstance(v, numbers.Real)):
        sig.fail(p.name, f"expected a Python number for the {p.dtype} scalar, got "
                         f"{type(v).__name__}")
    if p.dtype in FLOAT_DTYPES:
        v = float(v)
        if p.dtype in ("f16", "bf16"):
            try:
                return Half(half_bits(p.dtype, v))
            except (OverflowError, struct.error):
                sig.fail(p.name, f"{v!r} is out of the range of {p.dtype}")
        return SCALAR_CTYPES[p.dtype](v)
    if not isinstance(v, numbers.Integral):
        sig.fail(p.name, f"expected an integer for the {p.dtype} scalar, got {v!r}")
    lo, hi = INT_RANGES[p.dtype]
    if not lo <= int(v) <= hi:
        sig.fail(p.name, f"{int(v)} is out of the range of {p.dtype} [{lo}, {hi}]")
    return int(v)


def out_list(sig, out):
    """A call's out= as a list: one tensor stands for the only output."""
    return [out] if len(sig.outputs) == 1 and not isinstance(out, (list, tuple)) else list(out)


def check_call(sig, torch, values, out, given, fake=False):
    """Every check of a call's arguments that needs no launch, in argument
    order, and the sizes their shapes give: (the launcher's arguments for
    the inputs (ctypes scalars, data pointers), [(param, Arg)] for the
    tensors (inputs, then out=), out= as a list (None without it),
    {size: value}). values: the inputs in signature order.
    fake: torch's fake tensors at trace time (torch.compile), which have
    shapes and dtypes but no memory: the pointers, devices and scalars
    (symbolic there) go unchecked, and the sizes come from infer_sizes,
    whose comparisons torch can guard on."""
    cargs, checked, shapes = [], [], []
    for p, v in zip(sig.inputs, values):
        if p.is_scalar:
            if not fake:
                cargs.append(check_scalar(sig, p, v))
            continue
        a = check_tensor(sig, p, v, torch, memory=not fake)
        checked.append((p, a))
        shapes.append((p, a.shape))
        cargs.append(a.ptr)
    outs = None if out is None else out_list(sig, out)
    if outs is not None:
        if len(outs) != len(sig.outputs):
            sig.fail(None, f"out= holds {len(outs)} tensors, the kernel has "
                           f"{len(sig.outputs)} outputs "
                           f"({', '.join(p.name for p in sig.outputs)})")
        for p, v in zip(sig.outputs, outs):
            a = check_tensor(sig, p, v, torch, memory=not fake)
            checked.append((p, a))
            shapes.append((p, a.shape))
    if fake:
        return cargs, checked, outs, sig.infer_sizes(shapes, given)
    check_devices(sig, checked)
    return cargs, checked, outs, sig.solve(shapes, given)


def check_devices(sig, checked):
    first = None
    for p, a in checked:
        if a.device is None:
            continue
        if first is None:
            first = (p, a)
        elif a.device != first[1].device:
            sig.fail(p.name, f"wrong device: on cuda:{a.device}, but "
                             f"'{first[0].name}' is on cuda:{first[1].device}")


def empty_outputs(torch, sig, sizes, device):
    """The outputs of a call at these sizes, allocated by torch (uninitialized)."""
    return [torch.empty(shape, dtype=torch_dtype(torch, p.dtype), device=device)
            for p, shape in zip(sig.outputs, sig.output_shapes(sizes))]


def layouts(torch, tensors):
    """(what check_tensor's verdicts on the tensors and the sizes they give
    depend on, their data pointers, the streams __cuda_array_interface__
    names), for CUDA torch tensors and objects with
    __cuda_array_interface__: each one's dtype (typestr), shape, strides,
    and device (or whether it is read-only). None if one is anything else
    (DLPack, host memory, a wrong type): such a call goes through check_call
    every time."""
    key, ptrs, streams = [], [], []
    for v in tensors:
        if torch is not None and isinstance(v, torch.Tensor):
            device = v.device
            if device.type != "cuda":
                return None
            key.append((v.dtype, v.shape, v.stride(), device))
            ptrs.append(v.data_ptr())
            streams.append(None)
            continue
        cai = getattr(v, "__cuda_array_interface__", None)
        if cai is None:
            return None
        ptr, readonly = cai["data"]
        strides = cai.get("strides")
        key.append((cai.get("typestr", ""), tuple(cai["shape"]),
                    None if strides is None else tuple(strides), bool(readonly)))
        ptrs.append(ptr or 0)
        streams.append(cai.get("stream"))
    return tuple(key), ptrs, streams


class CallPlan:
    """What check_call derived from a call that the layouts of its tensors
    decide, kept for the next call whose tensors have the same layouts (and
    that passes the same sizes by name): the sizes, each tensor's bytes
    (inputs, then out=), whether torch runs it (a torch tensor among them),
    its device and the device of allocated outputs (the first torch
    tensor's). Such a call redoes only the checks the layouts do not
    decide: the scalars, the pointers and the overlaps."""
    __slots__ = ("sizes", "size_args", "nbytes", "uses_torch", "device", "out_device")

    def __init__(self, sig, torch, checked, sizes):
        self.sizes = sizes
        self.size_args = [sizes[s] for s in sig.sizes]
        self.nbytes = [a.nbytes for _, a in checked]
        self.device = self.out_device = None
        for _, a in checked:
            if self.device is None:
                self.device = a.device
            if self.out_device is None and torch is not None and isinstance(a.obj, torch.Tensor):
                self.out_device = a.obj.device
        self.uses_torch = self.out_device is not None


def stream_handle(stream):
    """A cudaStream_t from an int, a torch.cuda.Stream or a CuPy stream."""
    for attr in ("cuda_stream", "ptr"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    return int(stream)


class Kernel:
    """mod.<kernel>(inputs..., out=None, **sizes): see the package's docs."""

    def __init__(self, module, signature, lib):
        self.module, self.signature = module, signature
        self.name = signature.name
        sig = signature
        self._lib = lib
        tensor_types = [SCALAR_CTYPES[p.dtype] if p.is_scalar else ctypes.c_void_p
                        for p in sig.params]
        sizes = [ctypes.c_int64] * len(sig.sizes)
        self._launch = self._function("", tensor_types + sizes + [ctypes.c_void_p])
        self._launch_ws = self._function(
            "_with_workspace",
            tensor_types + sizes + [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p])
        self._ws_query = self._function("_workspace_size",
                                        sizes + [ctypes.POINTER(ctypes.c_size_t)])
        self._info_query = self._function("_launch_info", sizes + [
            ctypes.POINTER(LaunchInfo), ctypes.c_int, ctypes.POINTER(ctypes.c_int)])
        self._ws_bytes = {}
        self._plans = {}  # CallPlan by the layouts of a call (_check)
        self._input_index = {p.name: i for i, p in enumerate(sig.inputs)}
        self._scalar_inputs = [p.is_scalar for p in sig.inputs]
        self._tensor_inputs = [i for i, p in enumerate(sig.inputs) if not p.is_scalar]
        # The tensors of a call with out=, in check_call's order, and the
        # pairs of them that must not overlap: each output with every
        # tensor before it (the launchers' contract).
        self._tensors = [p for p in sig.inputs if not p.is_scalar] + list(sig.outputs)
        self._overlaps = [(i, j) for i, p in enumerate(self._tensors) if not p.is_input
                          for j in range(i)]
        self._op = None
        self.__doc__ = f"{sig}\n\nCompiled by tdslc for {module.arch}."

    def _function(self, suffix, argtypes):
        fn = getattr(self._lib, self.signature.launcher + suffix)
        fn.argtypes, fn.restype = argtypes, ctypes.c_int
        return fn

    def __repr__(self):
        return f"<tdsl kernel {self.signature}>"

    # -- queries (host only: no device needed) --------------------------------

    def workspace_size(self, **sizes):
        """Bytes of workspace a call at these sizes takes (memoized)."""
        key = tuple(self._sizes_by_name(sizes))
        if key not in self._ws_bytes:
            n = ctypes.c_size_t()
            self._check_status(self._ws_query(*key, ctypes.byref(n)))
            self._ws_bytes[key] = n.value
        return self._ws_bytes[key]

    def launch_info(self, **sizes):
        """Each launch's grid, block and dynamic shared memory at these sizes."""
        key = self._sizes_by_name(sizes)
        n = ctypes.c_int()
        self._check_status(self._info_query(*key, None, 0, ctypes.byref(n)))
        infos = (LaunchInfo * max(n.value, 1))()
        self._check_status(self._info_query(*key, infos, n.value, ctypes.byref(n)))
        return [{"grid": tuple(i.grid), "block": tuple(i.block),
                 "shared_bytes": i.shared_bytes} for i in infos[:n.value]]

    def _sizes_by_name(self, sizes):
        sig = self.signature
        unknown = set(sizes) - set(sig.sizes)
        missing = [s for s in sig.sizes if s not in sizes]
        if unknown or missing:
            raise TypeError(f"tdsl {self.name}: expected the sizes {', '.join(sig.sizes)} by "
                            "name" + (f"; unknown {', '.join(sorted(unknown))}" if unknown
                                      else f"; missing {', '.join(missing)}"))
        return [sizes[s] for s in sig.sizes]

    def _check_status(self, status):
        if status == 0:
            return
        lib = self._lib
        lib.tdsl_status_string.restype = ctypes.c_char_p
        message = lib.tdsl_status_string(status).decode()
        if status in CUDA_STATUSES:
            err = lib.tdsl_last_cuda_error()
            lib.cudaGetErrorString.restype = ctypes.c_char_p
            message += f" (CUDA error {err}: {lib.cudaGetErrorString(err).decode()})"
        raise LaunchError(self.name, status, status_name(status) or f"status {status}", message)

    # -- the call ---------------------------------------------------------------

    def bind(self, args, kwargs):
        """(input values in signature order, {size: value}) from a call's
        arguments, as Python binds them."""
        sig = self.signature
        if len(args) > len(sig.inputs):
            raise TypeError(f"tdsl {self.name}() takes {len(sig.inputs)} inputs "
                            f"({', '.join(p.name for p in sig.inputs)}), got {len(args)}")
        values = list(args) + [None] * (len(sig.inputs) - len(args))
        given = {}
        names = self._input_index
        for k, v in kwargs.items():
            if k in names:
                if names[k] < len(args):
                    raise TypeError(f"tdsl {self.name}() got input '{k}' twice")
                values[names[k]] = v
            elif k in sig.sizes:
                given[k] = v
            else:
                raise TypeError(f"tdsl {self.name}() got an unexpected argument '{k}' (inputs: "
                                f"{', '.join(names)}; sizes: {', '.join(sig.sizes)})")
        missing = [p.name for p, v in zip(sig.inputs, values) if v is None]
        if missing:
            raise TypeError(f"tdsl {self.name}() is missing input{'s' * (len(missing) > 1)} "
                            f"{', '.join(missing)}")
        return values, given

    def __call__(self, *args, out=None, stream=None, **kwargs):
        sig = self.signature
        values, given = self.bind(args, kwargs)
        torch = sys.modules.get("torch")
        plan, cargs, ptrs, streams, outs = self._check(torch, values, out, given)
        size_args = plan.size_args
        uses_torch = plan.uses_torch
        if outs is None:
            torch, device = self._torch_for_outputs(torch, plan.out_device)
            uses_torch = True
            outs = empty_outputs(torch, sig, plan.sizes, device)
            cargs += [o.data_ptr() for o in outs]
        else:
            self._check_overlaps(plan, ptrs)
            cargs += ptrs[len(ptrs) - len(outs):]
        if uses_torch:
            if stream is not None:
                sig.fail(None, "stream=: with torch tensors the kernel runs on torch's "
                               "current stream (use `with torch.cuda.stream(s):`)")
            index = plan.device
            current = torch.cuda.current_device()
            if index is None or index == current:
                self._run_torch(torch, current, cargs, size_args)
            else:
                with torch.cuda.device(index):
                    self._run_torch(torch, index, cargs, size_args)
        else:
            handle = stream_handle(stream) if stream is not None else \
                next((s for s in streams if s), 0)
            self._check_status(self._launch(*cargs, *size_args, handle))
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _check(self, torch, values, out, given):
        """check_call, or for a call whose tensors have the layouts of an
        earlier one that passed it, only the checks the layouts do not
        decide (scalars and pointers), in argument order. Returns (the
        CallPlan, the launcher's arguments for the inputs, the tensors' data
        pointers and streams, out= as a list or None)."""
        sig = self.signature
        if out is None:
            outs = None
        elif isinstance(out, (list, tuple)):
            outs = list(out)
        else:
            outs = [out] if len(sig.outputs) == 1 else None
        key = plan = None
        # What the key leaves out is checked every time: out= that check_call
        # must reject or make a list of, sizes by name that are not ints.
        if (out is None or (outs is not None and len(outs) == len(sig.outputs))) and \
                all(type(v) is int for v in given.values()):
            try:
                found = layouts(torch, [values[i] for i in self._tensor_inputs] + (outs or []))
                if found is not None:
                    key = (found[0], out is None, tuple(given.items()))
                    plan = self._plans.get(key)
            except Exception:  # an odd object: check_call says what is wrong with it
                key = plan = None
        if plan is None:
            cargs, checked, outs, sizes = check_call(sig, torch, values, out, given)
            plan = CallPlan(sig, torch, checked, sizes)
            if key is not None:
                if len(self._plans) >= CALL_PLANS:
                    self._plans.clear()
                self._plans[key] = plan
            return plan, cargs, [a.ptr for _, a in checked], [a.stream for _, a in checked], outs
        _, ptrs, streams = found
        cargs, i = [], 0
        for p, v, scalar in zip(sig.inputs, values, self._scalar_inputs):
            if scalar:
                cargs.append(check_scalar(sig, p, v))
            else:
                check_pointer(sig, p, ptrs[i], plan.nbytes[i])
                cargs.append(ptrs[i])
                i += 1
        for j in range(i, len(ptrs)):
            check_pointer(sig, self._tensors[j], ptrs[j], plan.nbytes[j])
        return plan, cargs, ptrs, streams, outs

    def _check_overlaps(self, plan, ptrs):
        """The launchers' contract: outputs overlap neither the inputs nor
        each other."""
        nbytes = plan.nbytes
        for i, j in self._overlaps:
            if ptrs[i] < ptrs[j] + nbytes[j] and ptrs[j] < ptrs[i] + nbytes[i]:
                self.signature.fail(self._tensors[i].name, f"overlaps '{self._tensors[j].name}'"
                                    ": outputs must not alias the inputs or each other")

    def _torch_for_outputs(self, torch, device):
        """torch, and the device of the outputs: that of the first torch
        tensor argument (device), else the current CUDA device."""
        if torch is None:
            try:
                import torch
            except ImportError:
                self.signature.fail(None, "outputs: pass them with out= (allocating them "
                                          "takes torch, which is not installed)")
        return torch, device if device is not None else torch.device("cuda")

    def _run_torch(self, torch, index, cargs, size_args):
        # The workspace comes from torch's caching allocator, on the stream
        # the launches use: a call allocates nothing itself, so it can be
        # captured in a CUDA graph.
        nbytes = self._ws_bytes.get(tuple(size_args))
        if nbytes is None:
            nbytes = self.workspace_size(**dict(zip(self.signature.sizes, size_args)))
        ws_ptr, ws = 0, None
        if nbytes:
            ws = torch.empty(nbytes + WORKSPACE_ALIGNMENT, dtype=torch.uint8,
                             device=torch.device("cuda", index))
            ws_ptr = -(-ws.data_ptr() // WORKSPACE_ALIGNMENT) * WORKSPACE_ALIGNMENT
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        stream = raw(index) if raw else torch.cuda.current_stream(index).cuda_stream
        self._check_status(self._launch_ws(*cargs, *size_args, ws_ptr, nbytes, stream))
        del ws  # returned to the allocator on this stream, after the launches in order

    # -- torch.compile -----------------------------------------------------------

    @property
    def op(self):
        """The kernel as a torch custom op (torch.ops.tdsl.<kernel>_<key>),
        registered on first use with a fake implementation from the same
        size inference: what a torch.compile'd model calls."""
        if self._op is None:
            from ._torch_ops import register
            self._op = register(self)
        return self._op
