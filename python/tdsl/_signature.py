"""Kernel signatures as `tdslc --emit=signature` writes them, and the size
inference that turns the shapes of a call's tensors into the launcher's size
arguments. Pure Python: the checks run (and are tested) without a GPU, and
torch's fake tensors go through the same code for torch.compile."""
import json

from ._errors import ArgumentError

# The dtypes a .tdsl parameter may have, with what a binding needs of each.
FLOAT_DTYPES = ("f32", "f16", "bf16", "f64")
INT_RANGES = {"i8": (-2 ** 7, 2 ** 7 - 1), "i32": (-2 ** 31, 2 ** 31 - 1)}


class Dim:
    """One dim of a parameter: constant + sum(coeffs[s] * s) over size symbols."""
    __slots__ = ("text", "constant", "coeffs")

    def __init__(self, text, constant, coeffs):
        self.text, self.constant, self.coeffs = text, constant, dict(coeffs)

    def evaluate(self, sizes):
        return self.constant + sum(c * sizes[s] for s, c in self.coeffs.items())

    def is_symbol(self):
        """Whether the dim is one bare size symbol (then a mismatch is that
        symbol's conflict)."""
        return self.constant == 0 and len(self.coeffs) == 1 and \
            next(iter(self.coeffs.values())) == 1


class Param:
    __slots__ = ("name", "role", "dtype", "element_bytes", "dims")

    def __init__(self, name, role, dtype, element_bytes, dims):
        self.name, self.role, self.dtype = name, role, dtype
        self.element_bytes, self.dims = element_bytes, dims

    @property
    def rank(self):
        return len(self.dims)

    @property
    def is_input(self):
        return self.role == "in"

    @property
    def is_scalar(self):
        """A rank-0 input, which the launcher takes by value; a rank-0 output
        is still a one-element tensor."""
        return self.is_input and not self.dims

    def shape_text(self):
        return "[" + ", ".join(d.text for d in self.dims) + "]" if self.dims else ""

    def __str__(self):
        return f"{self.name}: {self.dtype}{self.shape_text()}"

    __repr__ = __str__


def solving_order(params, known=()):
    """The fixpoint every size inference runs: [(param index, dim index,
    symbol)] in the order in which a dim with one size symbol not yet known
    solves that symbol, passing over params until no dim solves another;
    the symbols of `known` are known from the start. The order depends only
    on which symbols are known, never on their values: infer_sizes follows
    it with the values, _plan records it once, and undetermined_by_inputs
    reads which symbols it leaves unknown."""
    known, order = set(known), []
    progress = True
    while progress:
        progress = False
        for j, p in enumerate(params):
            for i, d in enumerate(p.dims):
                unknown = [s for s in d.coeffs if s not in known]
                if len(unknown) == 1:
                    known.add(unknown[0])
                    order.append((j, i, unknown[0]))
                    progress = True
    return order


class Signature:
    """One kernel's interface: `str(sig)` reads as the .tdsl declaration;
    `inputs`, `outputs` and `sizes` are in the launcher's order."""

    def __init__(self, name, launcher, sizes, params):
        self.name, self.launcher = name, launcher
        self.sizes = tuple(sizes)
        self.params = tuple(params)
        self.inputs = tuple(p for p in self.params if p.is_input)
        self.outputs = tuple(p for p in self.params if not p.is_input)
        self._plans = {}  # solve's, by the parameters that have shapes

    def __str__(self):
        return (f"{self.name}(" + ", ".join(map(str, self.inputs)) + ") -> (" +
                ", ".join(map(str, self.outputs)) + ")")

    def __repr__(self):
        return f"<tdsl signature {self}>"

    def fail(self, param, message):
        raise ArgumentError(self.name, param, message)

    def undetermined_by_inputs(self):
        """The size symbols the inputs' shapes cannot give: those the caller
        must pass (or that out= gives)."""
        known = {s for _, _, s in solving_order(self.inputs)}
        return [s for s in self.sizes if s not in known]

    def solve(self, shapes, given):
        """infer_sizes for a call. The order in which the dims solve the
        symbols depends only on which parameters have shapes, so it is
        planned once per set of parameters; a call runs the plan and checks
        the other dims. Any miss (and any size passed by name) goes to
        infer_sizes, which says what is wrong."""
        if given:
            return self.infer_sizes(shapes, given)
        key = tuple(p.name for p, _ in shapes)
        if key not in self._plans:
            self._plans[key] = self._plan([p for p, _ in shapes])
        plan = self._plans[key]
        if plan is None:
            return self.infer_sizes(shapes, given)
        steps, checks = plan
        values = {}
        for j, i, s, a, c, others in steps:
            rest = shapes[j][1][i] - c
            for t, k in others:
                rest -= k * values[t]
            value = rest if a == 1 else rest // a
            if value < 1 or (a != 1 and rest % a):
                return self.infer_sizes(shapes, given)
            values[s] = value
        for j, i, symbol, d in checks:
            extent = shapes[j][1][i]
            if (values[symbol] if symbol else d.evaluate(values)) != extent:
                return self.infer_sizes(shapes, given)
        return values

    def _plan(self, params):
        """([(shape index, dim, symbol, coeff, constant, other terms)] in
        solving order, [(shape index, dim, its symbol if bare, Dim)] left to
        check); None when the shapes leave a symbol unknown. A dim that
        solves its symbol with coefficient 1 holds by construction; the
        others are checked. Every dim is >= 1 when every size is (sema's
        rule), so the plan needs no separate test for empty tensors."""
        steps, solved = [], set()
        for j, i, s in solving_order(params):
            d = params[j].dims[i]
            others = tuple((t, c) for t, c in d.coeffs.items() if t != s)
            steps.append((j, i, s, d.coeffs[s], d.constant, others))
            if d.coeffs[s] == 1:
                solved.add((j, i))
        known = {s for _, _, s, _, _, _ in steps}
        if any(s not in known for s in self.sizes):
            return None
        checks = [(j, i, d.text if d.is_symbol() else None, d)
                  for j, p in enumerate(params) for i, d in enumerate(p.dims)
                  if (j, i) not in solved]
        return steps, checks

    def infer_sizes(self, shapes, given=None):
        """{size symbol: value} from [(param, shape)] whose ranks are already
        checked, and the sizes the caller passed by name. A dim with one
        unknown symbol solves it; once nothing more can be solved, every dim
        must agree with the values. Works on torch SymInts too."""
        known = {}
        for s, v in (given or {}).items():
            if isinstance(v, bool) or not isinstance(v, int):
                self.fail(None, f"size {s} must be an int, got {type(v).__name__}")
            if v < 1:
                self.fail(None, f"size {s} is {v}: tdsl sizes are >= 1")
            known[s] = (v, f"the argument {s}={v}")
        for p, shape in shapes:
            for i, (d, extent) in enumerate(zip(p.dims, shape)):
                if extent < 1:
                    self.fail(p.name, f"dim {i} ({d.text}) is {extent}: tdsl kernels take "
                                      "no empty tensors (every size >= 1)")
        for j, i, s in solving_order([p for p, _ in shapes], known):
            p, extent = shapes[j][0], shapes[j][1][i]
            d = p.dims[i]
            a = d.coeffs[s]
            rest = extent - d.constant - sum(c * known[t][0]
                                             for t, c in d.coeffs.items() if t != s)
            value = rest if a == 1 else rest // a
            if (a != 1 and rest % a != 0) or value < 1:
                self.fail(p.name, f"dim {i} ({d.text}) is {extent}: no {s} >= 1 "
                                  "gives that" + self._origins(d, known, s))
            known[s] = (value, f"dim {i} of '{p.name}'")
        missing = [s for s in self.sizes if s not in known]
        if missing:
            self.fail(None, "the shapes of the arguments do not determine size "
                            f"symbol{'s' if len(missing) > 1 else ''} {', '.join(missing)}: "
                            "pass the outputs (out=) or the sizes by name (" +
                            ", ".join(f"{s}=..." for s in missing) + ")")
        values = {s: v for s, (v, _) in known.items()}
        for p, shape in shapes:
            for i, (d, extent) in enumerate(zip(p.dims, shape)):
                expected = d.evaluate(values)
                if expected == extent:
                    continue
                if d.is_symbol():
                    s = d.text
                    self.fail(p.name, f"conflicting size symbol {s}: dim {i} is {extent}, "
                                      f"but {s} = {values[s]} from {known[s][1]}")
                self.fail(p.name, f"dim {i} ({d.text}) is {extent}, expected {expected}" +
                          self._origins(d, known))
        return {s: values[s] for s in self.sizes}

    @staticmethod
    def _origins(d, known, skip=None):
        parts = [f"{s} = {known[s][0]} from {known[s][1]}" for s in d.coeffs
                 if s != skip and s in known]
        return (" (" + ", ".join(parts) + ")") if parts else ""

    def output_shapes(self, sizes):
        return [tuple(d.evaluate(sizes) for d in p.dims) for p in self.outputs]


def parse_signatures(text):
    """(tdslc version, [Signature]) from `tdslc --emit=signature` output."""
    data = json.loads(text)
    sigs = []
    for k in data["kernels"]:
        params = [Param(p["name"], p["role"], p["dtype"], p["element_bytes"],
                        [Dim(d["text"], d["constant"], d["coeffs"]) for d in p["dims"]])
                  for p in k["params"]]
        sigs.append(Signature(k["name"], k["launcher"], k["sizes"], params))
    return data["tdslc_version"], sigs
