"""GPU suite of the tdsl package (run where torch sees a CUDA device):

    PYTHONPATH=python TDSL_TDSLC=build/bin/tdslc python3 -m unittest -v python/tests/gpu/test_gpu.py
    (or: python3 python/tests/gpu/test_gpu.py; pytest collects it too)

Every example kernel on torch tensors at odd shapes against a torch
reference in f64, the argument checks on real tensors, a CUDA-graph capture
and replay, and torch.compile(fullgraph=True) of an MLP block whose layers
are tdsl kernels. The last lines are unittest's summary (OK / FAILED)."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import tdsl  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
    HAVE_GPU = torch.cuda.is_available()
except ImportError:
    torch, HAVE_GPU = None, False

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
EXAMPLES = os.path.join(REPO, "dsl", "examples")
# One cache for the run: each example is compiled once for all its tests.
CACHE = os.environ.get("TDSL_CACHE_DIR") or tempfile.mkdtemp(prefix="tdsl-gpu-cache-")
_modules = {}


def example(name):
    if name not in _modules:
        _modules[name] = tdsl.compile(os.path.join(EXAMPLES, name + ".tdsl"), cache_dir=CACHE)
    return _modules[name]


def rand(*shape, dtype=None):
    return (torch.rand(*shape, device="cuda", dtype=torch.float64) * 2 - 1).to(
        dtype or torch.float32)


def h(*shape):
    return rand(*shape, dtype=torch.float16)


def d(x):
    return x.double()


# file, kernel, inputs (a function of nothing), reference (inputs -> outputs
# in f64), tolerance (gpu_check.py's rule: |out - ref| <= tol * (|ref| +
# mean |ref|); 0: exact). Shapes are odd and not multiples of any tile.
def cases():
    D = 64
    return [
        ("attention", "attention",
         lambda: (h(2, 3, 37, D), h(2, 3, 45, D), h(2, 3, 45, D), D ** -0.5),
         lambda Q, K, V, s: torch.softmax(d(Q) @ d(K).transpose(-1, -2) * s, -1) @ d(V), 1e-2),
        ("batched_gemm", "batched_gemm", lambda: (h(3, 37, 41), h(3, 41, 53)),
         lambda A, B: d(A) @ d(B), 1e-3),
        ("conv1d", "conv1d", lambda: (rand(101), rand(5)),
         lambda X, W: F.conv1d(d(X).view(1, 1, -1), d(W).view(1, 1, -1)).view(-1), 1e-4),
        ("conv2d", "conv2d", lambda: (rand(2, 3, 15, 13), rand(5, 3, 3, 3)),
         lambda X, Wt: F.conv2d(d(X), d(Wt)), 1e-4),
        ("elementwise", "elementwise", lambda: (rand(33, 1001), rand(1001), rand(1001), 0.75),
         lambda X, a, b, s: torch.relu(d(a) * d(X) + d(b)) * s, 1e-5),
        ("gemm", "gemm", lambda: (h(37, 41), h(41, 53)), lambda A, B: d(A) @ d(B), 1e-3),
        ("gemm_bias_relu", "gemm_bias_relu", lambda: (h(37, 41), h(41, 53), rand(53)),
         lambda A, B, b: torch.relu(d(A) @ d(B) + d(b)), 1e-2),
        ("igemm", "igemm",
         lambda: (torch.randint(-8, 8, (37, 41), dtype=torch.int8, device="cuda"),
                  torch.randint(-8, 8, (41, 53), dtype=torch.int8, device="cuda")),
         lambda A, B: (A.cpu().long() @ B.cpu().long()).cuda(), 0),
        ("layernorm", "layernorm", lambda: (h(33, 1001), rand(1001), rand(1001)),
         lambda X, g, b: F.layer_norm(d(X), (X.shape[1],), d(g), d(b), 1e-5), 1e-2),
        ("mlp", "mlp_up", lambda: (h(37, 64), h(64, 96), rand(96)),
         lambda X, W, b: F.gelu(d(X) @ d(W) + d(b)), 1e-2),
        ("mlp", "mlp_down", lambda: (h(37, 96), h(96, 64), rand(64), h(37, 64)),
         lambda H, W, b, X: d(H) @ d(W) + d(b) + d(X), 1e-2),
        ("mlp", "mlp_gated", lambda: (h(37, 64), h(64, 96), h(64, 96)),
         lambda X, Wg, Wu: F.silu(d(X) @ d(Wg)) * (d(X) @ d(Wu)), 1e-2),
        ("rowsum", "rowsum", lambda: (rand(33, 1001),), lambda X: d(X).sum(-1), 1e-5),
        ("sgemm", "sgemm", lambda: (rand(37, 41), rand(41, 53)), lambda A, B: d(A) @ d(B), 1e-4),
        ("softmax", "softmax", lambda: (h(33, 1001),), lambda X: torch.softmax(d(X), -1), 1e-2),
        ("transpose", "transpose", lambda: (rand(37, 53),), lambda X: d(X).t(), 0),
    ]


def mismatch(out, ref, tol):
    """None, or what is wrong: the rule of gpu_check.py and tdslc --check."""
    if out.shape != ref.shape:
        return f"shape {tuple(out.shape)}, expected {tuple(ref.shape)}"
    out, ref = out.double(), ref.double().to(out.device)
    if tol == 0:
        bad = (out != ref).sum().item()
        return f"{bad} elements differ" if bad else None
    err = ((out - ref).abs() / (ref.abs() + ref.abs().mean())).max().item()
    return None if err <= tol else f"max error {err:.3g} > {tol}"  # NaN fails too


@unittest.skipUnless(HAVE_GPU, "needs torch with a CUDA device")
class ExamplesTest(unittest.TestCase):
    def test_every_example_against_torch(self):
        torch.manual_seed(0)
        for file, kernel, make, reference, tol in cases():
            with self.subTest(kernel=kernel):
                args = make()
                out = example(file)[kernel](*args)
                torch.cuda.synchronize()
                self.assertIsNone(mismatch(out, reference(*args), tol))

    def test_cases_cover_every_example_kernel(self):
        covered = {(f, k) for f, k, *_ in cases()}
        for name in sorted(os.listdir(EXAMPLES)):
            if name.endswith(".tdsl"):
                stem = name[:-5]
                for k in example(stem).kernels:
                    self.assertIn((stem, k), covered, "add a torch reference for it")

    def test_out_and_stream(self):
        mod = example("softmax")
        X = h(7, 129)
        Y = torch.empty_like(X)
        self.assertIs(mod.softmax(X, out=Y), Y)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            Z = mod.softmax(X)
        s.synchronize()
        self.assertIsNone(mismatch(Z, torch.softmax(d(X), -1), 1e-2))
        self.assertIsNone(mismatch(Y, torch.softmax(d(X), -1), 1e-2))

    def test_cuda_array_interface(self):
        """Objects that only expose __cuda_array_interface__ (CuPy's way)."""
        class View:
            def __init__(self, t):
                self.__cuda_array_interface__ = t.__cuda_array_interface__
        mod = example("elementwise")
        X, a, b = rand(5, 9), rand(9), rand(9)
        Y = torch.empty_like(X)
        mod.elementwise(View(X), View(a), View(b), 2.0, out=View(Y))
        torch.cuda.synchronize()
        self.assertIsNone(mismatch(Y, torch.relu(d(a) * d(X) + d(b)) * 2.0, 1e-5))


@unittest.skipUnless(HAVE_GPU, "needs torch with a CUDA device")
class ArgumentErrorsTest(unittest.TestCase):
    def test_refusals_launch_nothing(self):
        mod = example("elementwise")
        X, a, b = rand(5, 9), rand(9), rand(9)
        Y = torch.full((5, 9), 7.0, device="cuda")

        def refuses(pattern, *args, **kw):
            with self.assertRaisesRegex(tdsl.ArgumentError, pattern):
                mod.elementwise(*args, **kw)
        refuses(r"argument 'X': wrong device: expected a CUDA tensor, got one on cpu",
                X.cpu(), a, b, 1.0, out=Y)
        refuses(r"argument 'a': wrong dtype: expected f32 \(torch.float32\), got torch.float16",
                X, a.half(), b, 1.0, out=Y)
        refuses(r"argument 'X': non-contiguous: expected a dense row-major tensor, got strides "
                r"\(1, 5\)", rand(9, 5).t(), a, b, 1.0, out=Y)
        refuses(r"argument 'b': rank mismatch: expected rank 1", X, a, b.view(1, 9), 1.0, out=Y)
        refuses("argument 'Y': conflicting size symbol C: dim 1 is 8, but C = 9", X, a, b, 1.0,
                out=torch.empty(5, 8, device="cuda"))
        refuses("argument 'scale': expected a Python number for the f32 scalar, got Tensor",
                X, a, b, torch.tensor(1.0, device="cuda"), out=Y)

        class Shifted:  # a real allocation, 2 bytes in: misaligned for f32
            def __init__(self, t):
                cai = dict(t.__cuda_array_interface__)
                cai["data"] = (cai["data"][0] + 2, False)
                self.__cuda_array_interface__ = cai
        refuses("argument 'X': misaligned: the data pointer 0x[0-9a-f]+ is not a multiple of 4",
                Shifted(X), a, b, 1.0, out=Y)
        torch.cuda.synchronize()
        self.assertTrue(bool((Y == 7.0).all()), "a refused call wrote its output")

    @unittest.skipUnless(HAVE_GPU and torch.cuda.device_count() > 1, "needs two GPUs")
    def test_two_devices(self):
        mod = example("elementwise")
        with self.assertRaisesRegex(tdsl.ArgumentError, r"argument 'a': wrong device: on cuda:1, "
                                    "but 'X' is on cuda:0"):
            mod.elementwise(rand(5, 9), rand(9).to("cuda:1"), rand(9), 1.0)


@unittest.skipUnless(HAVE_GPU, "needs torch with a CUDA device")
class CudaGraphTest(unittest.TestCase):
    def test_capture_and_replay(self):
        """Outputs and workspace come from torch's allocator: the call
        captures. softmax with fuse_rows = off keeps its row maxima and sums
        in a workspace (the row chain would hold them in registers)."""
        mod = tdsl.compile(os.path.join(EXAMPLES, "softmax.tdsl"), schedule={"fuse_rows": "off"},
                           cache_dir=CACHE)
        self.assertGreater(mod.softmax.workspace_size(R=33, C=1001), 0)
        X = h(33, 1001)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            mod.softmax(X)  # warm up: kernel attributes, device properties
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            Y = mod.softmax(X)
        for _ in range(2):
            X.copy_(h(33, 1001))
            g.replay()
            torch.cuda.synchronize()
            self.assertIsNone(mismatch(Y, torch.softmax(d(X), -1), 1e-2))


@unittest.skipUnless(HAVE_GPU, "needs torch with a CUDA device")
class TorchCompileTest(unittest.TestCase):
    def test_mlp_block_without_graph_break(self):
        mlp = example("mlp")
        up, down = mlp.mlp_up.op, mlp.mlp_down.op
        D, Fh = 64, 256

        class Block(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = torch.nn.LayerNorm(D, device="cuda")
                self.w1 = torch.nn.Parameter(h(D, Fh) * 0.1)
                self.b1 = torch.nn.Parameter(rand(Fh) * 0.1)
                self.w2 = torch.nn.Parameter(h(Fh, D) * 0.1)
                self.b2 = torch.nn.Parameter(rand(D) * 0.1)

            def forward(self, x):
                y = self.norm(x.float()).half()
                return down(up(y, self.w1, self.b1), self.w2, self.b2, x) * 2

        block = Block()
        compiled = torch.compile(block, fullgraph=True)  # a graph break is an error
        with torch.no_grad():
            for T in (37, 101):  # a second token count: a recompile, or dynamic shapes
                x = h(T, D)
                torch._dynamo.mark_dynamic(x, 0)
                got = compiled(x)
                y = F.layer_norm(d(x), (D,), d(block.norm.weight), d(block.norm.bias), 1e-5)
                ref = (F.gelu(d(y.half()) @ d(block.w1) + d(block.b1)).half().double()
                       @ d(block.w2) + d(block.b2) + d(x)) * 2
                torch.cuda.synchronize()
                self.assertIsNone(mismatch(got, ref, 2e-2))
            explain = torch._dynamo.explain(block)(h(37, D))
            self.assertEqual(explain.graph_break_count, 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
