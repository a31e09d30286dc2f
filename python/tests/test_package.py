"""CPU tests of the tdsl package (ctest `python`; no GPU, no torch needed):
compiling through the package and the cache, signatures and size
inference, and every argument error on small fakes that expose
__cuda_array_interface__ (or __array_interface__, for host memory).

    PYTHONPATH=python TDSL_TDSLC=build/bin/tdslc python3 -m unittest discover -s python/tests -v
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import tdsl  # noqa: E402
from tdsl import _toolchain  # noqa: E402
from tdsl._signature import parse_signatures  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(REPO, "dsl", "examples")


def have_nvcc():
    try:
        _toolchain.find_nvcc()
        return True
    except tdsl.TdslError:
        return False


NEEDS_NVCC = unittest.skipUnless(have_nvcc(), "nvcc not found: the compile tests need the "
                                              "CUDA toolkit (CI has it in /usr/local/cuda)")


class Fake:
    """CUDA memory as __cuda_array_interface__ describes it; never read."""

    def __init__(self, shape, typestr="<f4", ptr=0x10000000, strides=None, readonly=False):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr,
                                         "data": (ptr, readonly), "strides": strides,
                                         "version": 3}


class HostArray:
    """Host memory, as numpy describes it."""

    def __init__(self, shape):
        self.__array_interface__ = {"shape": tuple(shape), "typestr": "<f4",
                                    "data": (0x1000, False), "version": 3}


def signatures(name):
    out = subprocess.run([tdsl.find_tdslc(), os.path.join(EXAMPLES, name), "--emit=signature"],
                         capture_output=True, text=True, check=True).stdout
    return {s.name: s for s in parse_signatures(out)[1]}


class SignatureTest(unittest.TestCase):
    def test_from_tdslc(self):
        sig = signatures("elementwise.tdsl")["elementwise"]
        self.assertEqual(str(sig), "elementwise(X: f32[R, C], a: f32[C], b: f32[C], "
                                   "scale: f32) -> (Y: f32[R, C])")
        self.assertEqual(sig.sizes, ("R", "C"))
        self.assertEqual([p.name for p in sig.inputs], ["X", "a", "b", "scale"])
        self.assertTrue(sig.inputs[3].is_scalar)
        self.assertEqual(sig.launcher, "tdsl_elementwise")

    def test_affine_dims(self):
        sig = signatures("conv1d.tdsl")["conv1d"]
        X, W, Y = sig.params
        self.assertEqual(sig.infer_sizes([(X, (10,)), (W, (3,))]), {"L": 8, "R": 3})
        # A call's planned solve gives the same, twice (the plan is kept).
        for _ in range(2):
            self.assertEqual(sig.solve([(X, (10,)), (W, (3,))], {}), {"L": 8, "R": 3})
        with self.assertRaisesRegex(tdsl.ArgumentError, r"argument 'X': dim 0 \(L \+ R - 1\) "
                                    r"is 10, expected 9 \(L = 7 from dim 0 of 'Y'"):
            sig.solve([(X, (10,)), (W, (3,)), (Y, (7,))], {})
        self.assertEqual(sig.output_shapes({"L": 8, "R": 3}), [(8,)])
        # X alone leaves L + R - 1 = 10 with two unknowns.
        self.assertEqual(sig.undetermined_by_inputs(), [])
        with self.assertRaisesRegex(tdsl.ArgumentError, r"argument 'X': dim 0 \(L \+ R - 1\) "
                                    r"is 2: no L >= 1 gives that \(R = 3 from dim 0 of 'W'\)"):
            sig.infer_sizes([(X, (2,)), (W, (3,))])

    def test_conflicts_and_gaps(self):
        sig = signatures("gemm.tdsl")["gemm"]
        A, B, C = sig.params
        self.assertEqual(sig.infer_sizes([(A, (3, 4)), (B, (4, 5))]), {"M": 3, "K": 4, "N": 5})
        with self.assertRaisesRegex(tdsl.ArgumentError, "argument 'B': conflicting size symbol "
                                    "K: dim 0 is 6, but K = 4 from dim 1 of 'A'"):
            sig.infer_sizes([(A, (3, 4)), (B, (6, 5))])
        with self.assertRaisesRegex(tdsl.ArgumentError, "argument 'C': conflicting size symbol "
                                    "N: dim 1 is 6, but N = 5 from dim 1 of 'B'"):
            sig.solve([(A, (3, 4)), (B, (4, 5)), (C, (3, 6))], {})
        with self.assertRaisesRegex(tdsl.ArgumentError, "do not determine size symbol N"):
            sig.solve([(A, (3, 4))], {})
        with self.assertRaisesRegex(tdsl.ArgumentError, "do not determine size symbol N: pass "
                                    r"the outputs \(out=\) or the sizes by name \(N=...\)"):
            sig.infer_sizes([(A, (3, 4))])
        self.assertEqual(sig.infer_sizes([(A, (3, 4))], {"N": 2})["N"], 2)
        with self.assertRaisesRegex(tdsl.ArgumentError, r"dim 1 \(K\) is 0: tdsl kernels take "
                                    "no empty tensors"):
            sig.infer_sizes([(A, (3, 0)), (B, (0, 5))])

    def test_scaled_dim(self):
        src = "kernel up(X: f32[2 * N]) -> (Y: f32[N]) {\n  Y[i] = X[2 * i]\n}\n"
        out = subprocess.run([tdsl.find_tdslc(), "-", "--emit=signature"], input=src,
                             capture_output=True, text=True, check=True).stdout
        sig = parse_signatures(out)[1][0]
        self.assertEqual(sig.infer_sizes([(sig.inputs[0], (8,))]), {"N": 4})
        with self.assertRaisesRegex(tdsl.ArgumentError, r"dim 0 \(2 \* N\) is 7: no N >= 1"):
            sig.infer_sizes([(sig.inputs[0], (7,))])


class ScalarEncodingTest(unittest.TestCase):
    """16-bit scalars go to the launchers as tdsl_f16 / tdsl_bf16 bits."""

    def test_half_bits(self):
        from tdsl._kernel import half_bits
        self.assertEqual(half_bits("f16", 1.0), 0x3C00)
        self.assertEqual(half_bits("f16", -2.5), 0xC100)
        self.assertEqual(half_bits("bf16", 1.0), 0x3F80)
        self.assertEqual(half_bits("bf16", 1.00390625), 0x3F80)  # a tie: to even
        self.assertEqual(half_bits("bf16", 1.01171875), 0x3F82)  # a tie: to even, up
        self.assertEqual(half_bits("bf16", float("nan")), 0x7FC0)
        with self.assertRaises(OverflowError):
            half_bits("f16", 70000.0)


class ToolchainTest(unittest.TestCase):
    def test_tdslc_env_wins(self):
        old = os.environ.get("TDSL_TDSLC")
        try:
            os.environ["TDSL_TDSLC"] = "/nonexistent/tdslc"
            with self.assertRaisesRegex(tdsl.TdslError, "TDSL_TDSLC=/nonexistent/tdslc is not"):
                tdsl.find_tdslc()
        finally:
            if old is None:
                del os.environ["TDSL_TDSLC"]
            else:
                os.environ["TDSL_TDSLC"] = old

    def test_cache_location(self):
        env = dict(os.environ)
        try:
            os.environ.pop("TDSL_CACHE_DIR", None)
            os.environ["XDG_CACHE_HOME"] = "/x/cache"
            self.assertEqual(tdsl.cache_dir(), "/x/cache/tdsl")
            os.environ.pop("XDG_CACHE_HOME")
            self.assertEqual(tdsl.cache_dir(), os.path.expanduser("~/.cache/tdsl"))
            os.environ["TDSL_CACHE_DIR"] = "/y"
            self.assertEqual(tdsl.cache_dir(), "/y")
            self.assertEqual(tdsl.cache_dir("/z"), "/z")
        finally:
            os.environ.clear()
            os.environ.update(env)


@NEEDS_NVCC
class CompileTest(unittest.TestCase):
    def setUp(self):
        self.cache = tempfile.mkdtemp(prefix="tdsl-cache-")

    def tearDown(self):
        shutil.rmtree(self.cache, ignore_errors=True)

    def test_cache_hit_runs_no_nvcc(self):
        path = os.path.join(EXAMPLES, "elementwise.tdsl")
        first = tdsl.compile(path, arch="sm_90", cache_dir=self.cache)
        self.assertFalse(first.cache_hit)
        old = os.environ.get("CUDACXX")
        os.environ["CUDACXX"] = "/nonexistent/nvcc"  # any nvcc run would now fail
        try:
            again = tdsl.compile(path, arch="sm_90", cache_dir=self.cache)
            self.assertTrue(again.cache_hit)
            self.assertEqual(again.key, first.key)
            self.assertEqual(again.elementwise.workspace_size(R=3, C=5), 0)
            # Another arch, opt level or schedule is another entry.
            with self.assertRaisesRegex(tdsl.TdslError, "CUDACXX=/nonexistent/nvcc"):
                tdsl.compile(path, arch="sm_80", cache_dir=self.cache)
            with self.assertRaisesRegex(tdsl.TdslError, "CUDACXX=/nonexistent/nvcc"):
                tdsl.compile(path, arch="sm_90", opt=1, cache_dir=self.cache)
        finally:
            if old is None:
                del os.environ["CUDACXX"]
            else:
                os.environ["CUDACXX"] = old
        self.assertEqual(os.listdir(self.cache), [first.key])

    def test_source_text_and_introspection(self):
        src = "kernel scale(X: f32[N], s: f32) -> (Y: f32[N]) {\n  Y[i] = X[i] * s\n}\n"
        mod = tdsl.compile(src, arch="sm_90", schedule={"threads": 128},
                           cache_dir=self.cache)
        self.assertEqual(str(mod.scale.signature), "scale(X: f32[N], s: f32) -> (Y: f32[N])")
        self.assertIn("__global__", mod.source)
        self.assertIn("tdsl_scale_with_workspace", mod.header)
        with open(os.path.join(self.cache, mod.key, "key.json")) as f:
            self.assertIn("--schedule=threads=128", f.read())
        self.assertRegex(mod.report, r"kernel scale \(at N=4096\)\n  launch 0 'Y'")
        self.assertEqual(mod.scale.launch_info(N=1000)[0]["block"], (128, 1, 1))  # the schedule
        self.assertIs(mod["scale"], mod.scale)
        with self.assertRaisesRegex(AttributeError, "no kernel 'nope' .kernels: scale."):
            mod.nope

    def test_symbol_prefix(self):
        """A --symbol-prefix reaches the signature too: the launchers it
        names are the library's."""
        src = "kernel scale(X: f32[N], s: f32) -> (Y: f32[N]) {\n  Y[i] = X[i] * s\n}\n"
        mod = tdsl.compile(src, arch="sm_90", flags=["--symbol-prefix=pre_"], cache_dir=self.cache)
        self.assertIn("pre_scale_with_workspace", mod.header)
        self.assertEqual(mod.scale.workspace_size(N=1000), 0)

    def test_compile_errors(self):
        with self.assertRaisesRegex(tdsl.CompileError, r"<source>:1:\d+: error: dimension "
                                    "'N - 1' may be zero or negative"):
            tdsl.compile("kernel k(X: f32[N - 1]) -> (Y: f32[N]) {\n Y[i] = 0.0\n}\n",
                         arch="sm_90", cache_dir=self.cache)
        with self.assertRaisesRegex(tdsl.TdslError, "cannot read /nonexistent.tdsl"):
            tdsl.compile("/nonexistent.tdsl", arch="sm_90", cache_dir=self.cache)
        with self.assertRaisesRegex(tdsl.TdslError, "pass opt= and arch= instead"):
            tdsl.compile(os.path.join(EXAMPLES, "softmax.tdsl"), arch="sm_90", flags=["-O0"],
                         cache_dir=self.cache)


@NEEDS_NVCC
class ArgumentTest(unittest.TestCase):
    """Each refusal names the parameter and says what was expected; none
    launches anything (the pointers are made up)."""

    @classmethod
    def setUpClass(cls):
        cls.cache = tempfile.mkdtemp(prefix="tdsl-cache-")
        cls.ew = tdsl.compile(os.path.join(EXAMPLES, "elementwise.tdsl"), arch="sm_90",
                              cache_dir=cls.cache).elementwise
        src = "kernel ints(X: i32[N], k: i8) -> (Y: i32[N]) {\n  Y[i] = X[i] * k\n}\n"
        cls.ints = tdsl.compile(src, arch="sm_90", cache_dir=cls.cache).ints

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.cache, ignore_errors=True)

    def call(self, X=None, a=None, b=None, scale=2.0, out=None, **kw):
        X = X or Fake((3, 5))
        a = a or Fake((5,), ptr=0x20000000)
        b = b or Fake((5,), ptr=0x30000000)
        out = out or Fake((3, 5), ptr=0x40000000)
        return self.ew(X, a, b, scale, out=out, **kw)

    def refuses(self, pattern, **kw):
        with self.assertRaisesRegex(tdsl.ArgumentError, pattern):
            self.call(**kw)

    def test_dtype(self):
        self.refuses(r"argument 'X': wrong dtype: expected f32 \(typestr '<f4'\), got '<f2'",
                     X=Fake((3, 5), "<f2"))

    def test_device(self):
        self.refuses(r"argument 'a': wrong device: expected CUDA memory, got host memory "
                     r"\(HostArray\)", a=HostArray((5,)))
        self.refuses(r"argument 'b': expected a CUDA tensor f32\[C\] .* got list", b=[1.0] * 5)

    def test_non_contiguous(self):
        self.refuses(r"argument 'X': non-contiguous: expected a dense row-major array, got "
                     r"strides \(4, 12\) bytes for shape \(3, 5\)",
                     X=Fake((3, 5), strides=(4, 12)))
        # The strides of extent-1 dims do not matter: past the checks, only the
        # launch fails (or, with a device, would run: not here).
        with self.assertRaisesRegex(tdsl.ArgumentError, "overlaps"):
            self.call(X=Fake((1, 5), strides=(99, 4)), out=Fake((1, 5), ptr=0x10000004))

    def test_rank(self):
        self.refuses(r"argument 'X': rank mismatch: expected rank 2 \(f32\[R, C\]\), got shape "
                     r"\(15,\)", X=Fake((15,)))

    def test_conflicting_size(self):
        self.refuses("argument 'b': conflicting size symbol C: dim 0 is 6, but C = 5 from dim 1 "
                     "of 'X'", b=Fake((6,), ptr=0x30000000))
        self.refuses("argument 'Y': conflicting size symbol R: dim 0 is 4, but R = 3 from dim 0 "
                     "of 'X'", out=Fake((4, 5), ptr=0x40000000))
        self.refuses("conflicting size symbol R: dim 0 is 3, but R = 2 from the argument R=2",
                     R=2)

    def test_misaligned(self):
        self.refuses(r"argument 'X': misaligned: the data pointer 0x10000002 is not a multiple "
                     "of 4 bytes, the alignment of f32", X=Fake((3, 5), ptr=0x10000002))
        self.refuses("argument 'a': null data pointer", a=Fake((5,), ptr=0))

    def test_scalars(self):
        self.refuses("argument 'scale': expected a Python number for the f32 scalar, got Fake",
                     scale=Fake(()))
        self.refuses("argument 'scale': expected a Python number for the f32 scalar, got bool",
                     scale=True)
        X, Y = Fake((4,), "<i4"), Fake((4,), "<i4", ptr=0x40000000)
        with self.assertRaisesRegex(tdsl.ArgumentError, r"argument 'k': 300 is out of the range "
                                    r"of i8 \[-128, 127\]"):
            self.ints(X, 300, out=Y)
        with self.assertRaisesRegex(tdsl.ArgumentError, "argument 'k': expected an integer for "
                                    "the i8 scalar, got 2.5"):
            self.ints(X, 2.5, out=Y)

    def test_outputs(self):
        self.refuses("argument 'Y': overlaps 'X': outputs must not alias the inputs",
                     out=Fake((3, 5)))
        self.refuses("argument 'Y': read-only", out=Fake((3, 5), ptr=0x40000000, readonly=True))
        with self.assertRaisesRegex(tdsl.ArgumentError, "out= holds 2 tensors, the kernel has 1 "
                                    r"outputs \(Y\)"):
            self.ew(Fake((3, 5)), Fake((5,)), Fake((5,)), 1.0, out=[Fake((3, 5))] * 2)
        if "torch" not in sys.modules:
            with self.assertRaisesRegex(tdsl.ArgumentError, "outputs: pass them with out="):
                self.ew(Fake((3, 5)), Fake((5,), ptr=0x20000000), Fake((5,), ptr=0x30000000), 1.0)

    def test_repeated_layouts(self):
        """A call whose tensors have the layouts of an earlier call takes
        its sizes from that call's plan, and still checks what the layouts
        do not decide: the scalars, the pointers, the overlaps."""
        ew = tdsl.compile(os.path.join(EXAMPLES, "elementwise.tdsl"), arch="sm_90",
                          cache_dir=self.cache).elementwise
        ew._launch = mock.Mock(side_effect=AssertionError("a made-up pointer launched"))
        X, a, b = Fake((3, 5)), Fake((5,), ptr=0x20000000), Fake((5,), ptr=0x30000000)
        Y = Fake((3, 5), ptr=0x40000000)
        with self.assertRaisesRegex(tdsl.ArgumentError, "argument 'Y': overlaps 'X'"):
            ew(X, a, b, 1.0, out=Fake((3, 5), ptr=0x10000004))  # leaves the plan
        with mock.patch("tdsl._kernel.check_call", side_effect=AssertionError("not planned")):
            with self.assertRaisesRegex(tdsl.ArgumentError, "argument 'Y': overlaps 'X'"):
                ew(X, a, b, 1.0, out=Fake((3, 5), ptr=0x10000004))
            with self.assertRaisesRegex(tdsl.ArgumentError, "argument 'X': misaligned"):
                ew(Fake((3, 5), ptr=0x10000002), a, b, 1.0, out=Y)
            with self.assertRaisesRegex(tdsl.ArgumentError, "argument 'b': null data pointer"):
                ew(X, a, Fake((5,), ptr=0), 1.0, out=Y)
            with self.assertRaisesRegex(tdsl.ArgumentError, "argument 'scale': expected a "
                                        "Python number for the f32 scalar, got bool"):
                ew(X, a, b, True, out=Y)
        # Other layouts are checked whole.
        with self.assertRaisesRegex(tdsl.ArgumentError, "argument 'Y': conflicting size "
                                    "symbol R: dim 0 is 4, but R = 3"):
            ew(X, a, b, 1.0, out=Fake((4, 5), ptr=0x40000000))
        with self.assertRaisesRegex(tdsl.ArgumentError, "argument 'Y': read-only"):
            ew(X, a, b, 1.0, out=Fake((3, 5), ptr=0x40000000, readonly=True))

    def test_python_binding(self):
        with self.assertRaisesRegex(TypeError, r"takes 4 inputs \(X, a, b, scale\), got 5"):
            self.ew(*[Fake((3, 5))] * 5)
        with self.assertRaisesRegex(TypeError, "is missing input scale"):
            self.ew(Fake((3, 5)), Fake((5,)), Fake((5,)))
        with self.assertRaisesRegex(TypeError, "unexpected argument 'Q'"):
            self.call(Q=1)

    def test_status_becomes_exception(self):
        # Sizes the launcher refuses: its status, with the runtime's message,
        # from the planning step before any launch (safe with a GPU too).
        with self.assertRaisesRegex(tdsl.LaunchError, "tdsl elementwise: TDSL_ERROR_TOO_LARGE"):
            self.call(X=Fake((2 ** 40, 2 ** 10), ptr=2 ** 56), a=Fake((2 ** 10,), ptr=0x20000000),
                      b=Fake((2 ** 10,), ptr=0x30000000),
                      out=Fake((2 ** 40, 2 ** 10), ptr=2 ** 60))
        with self.assertRaises(tdsl.LaunchError) as e:
            self.ew.workspace_size(R=2 ** 40, C=2 ** 10)
        self.assertEqual(e.exception.status_name, "TDSL_ERROR_TOO_LARGE")

    def test_no_device_status(self):
        if _toolchain.load_cudart() is None:
            self.skipTest("no libcudart")
        try:
            _toolchain.device_capability()
            self.skipTest("a CUDA device is present: the made-up pointers must not launch")
        except tdsl.TdslError:
            pass
        # Every check passes; the launch itself fails without a device.
        with self.assertRaisesRegex(tdsl.LaunchError, r"tdsl elementwise: TDSL_ERROR_(LAUNCH|"
                                    r"DEVICE|CUDA): .*\(CUDA error \d+: "):
            self.call()


if __name__ == "__main__":
    unittest.main(verbosity=2)
