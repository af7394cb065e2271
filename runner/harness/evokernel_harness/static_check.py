"""The static check: read a candidate's source for the known ways to fake a speedup.

A finding is evidence, never the verdict by itself (issue 18): a try/except around a build,
a torch op beside an own kernel, a CUDA stream, `cudnn.benchmark = True` are what honest
code does too. They are warnings ("warn"); the run decides, from what the candidate did
(which kernels ran and whose, which exceptions its code handled, the timing over every
stream, the outputs). Only what has no honest use refuses on sight ("reject"): replacing
an attribute of a library's or the harness's objects (the timer, CUDA events,
synchronisation, the checks: never an attribute of the candidate's own objects, whatever its
name), interposing CUDA's timing in C, and source that does not parse (docs/DESIGN.md, "What
the static check refuses on sight"). Findings carry the hack class they point at.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from .record import StaticRecord

Finding = dict[str, Any]  # one finding of the check: code, hack, line, text, message, severity

# torch compute ops: calling these from a candidate is falling back to PyTorch (hack 12)
COMPUTE_OPS = set(
    """
matmul mm bmm addmm addmv addbmm baddbmm linear bilinear conv1d conv2d conv3d
conv_transpose1d conv_transpose2d conv_transpose3d softmax log_softmax softmin layer_norm
group_norm batch_norm instance_norm rms_norm cross_entropy nll_loss mse_loss l1_loss
smooth_l1_loss kl_div binary_cross_entropy binary_cross_entropy_with_logits sum mean amax
amin max min exp exp2 expm1 log log2 log1p tanh sigmoid relu relu6 gelu silu mish elu selu
leaky_relu softplus hardtanh hardswish hardsigmoid add mul div sub pow sqrt rsqrt clamp
clip where einsum norm cumsum cumprod prod dropout scaled_dot_product_attention logsumexp
var std topk sort argmax argmin abs neg square tensordot inner outer dot vdot erf erfc
reciprocal sign max_pool1d max_pool2d max_pool3d avg_pool1d avg_pool2d avg_pool3d
adaptive_avg_pool2d adaptive_max_pool2d interpolate pad normalize cosine_similarity
pairwise_distance cdist triu tril diag trace kron cross frobenius_norm matrix_norm
vector_norm
""".split()
)
# ops a vendor library does (cuBLAS, cuDNN): a candidate may call them for part of the work
# (the runtime trace decides whether that is all of the work), unless the task says
# "libraries": "deny"
LIBRARY_OPS = set(
    """
matmul mm bmm addmm addmv addbmm baddbmm linear bilinear conv1d conv2d conv3d
conv_transpose1d conv_transpose2d conv_transpose3d einsum tensordot inner outer dot vdot
""".split()
)
# the reference may call these without a candidate that calls them falling back
NEUTRAL = set(
    """
view reshape size shape contiguous to float half bfloat16 double int long bool cuda cpu
empty empty_like zeros zeros_like ones ones_like full full_like numel dim stride unsqueeze
squeeze permute transpose t expand flatten unflatten item tolist detach clone copy_ fill_
zero_ is_contiguous data_ptr type_as new_empty new_zeros new_full manual_seed get arange
forward backward apply save_for_backward append extend keys values items dtype device
requires_grad_ retain_grad chunk split narrow select index_select gather stack cat
""".split()
)

THREAD_MODULES = {"threading", "_thread", "concurrent", "multiprocessing", "asyncio", "subprocess", "signal"}
TAMPER_ATTRS = {
    "elapsed_time",
    "synchronize",
    "perf_counter",
    "perf_counter_ns",
    "time",
    "time_ns",
    "monotonic",
    "process_time",
    "record",
    "Event",
    "allclose",
    "isclose",
    "equal",
    "assert_close",
    "isfinite",
    "isnan",
    "isinf",
    "norm",
    "abs",
    "max",
    "amax",
    "sub",
    "query",
    "wait",
    "do_bench",
    "Timer",
}
TAMPER_ROOTS = {"torch", "time", "numpy", "np", "triton", "timeit", "builtins", "sys", "evokernel_harness"}

C_RULES = [
    # (regex, code, hack, severity, message)
    (
        r"\bcudaStreamCreate\w*\s*\(|\bcuStreamCreate\w*\s*\(|getStreamFromPool|\bcudaStreamPerThread\b|"
        r"\bcudaStreamNonBlocking\b",
        "side-stream",
        3,
        "warn",
        "creates or uses another stream: timing covers every stream, and work the caller's stream never waits for is "
        "reported",
    ),
    (
        r"std::j?thread\b|\bpthread_create\b|std::async\b|#\s*include\s*<(thread|future)>|\bcudaLaunchHostFunc\b|"
        r"\bcudaStreamAddCallback\b",
        "background-thread",
        4,
        "warn",
        "starts host threads or callbacks: threads still running after a call are refused at run time",
    ),
    (
        r"\btry\s*\{|\bcatch\s*\(",
        "torch-fallback",
        12,
        "warn",
        "try/catch: a fallback is refused only where the trace shows its own kernels did not do the work",
    ),
    (
        r"\bdlsym\b|\bRTLD_NEXT\b|LD_PRELOAD|\bmprotect\b|\b(cudaEventElapsedTime|cudaEventRecord|"
        r"cudaEventSynchronize|cudaDeviceSynchronize|cudaStreamSynchronize|cuEventElapsedTime)\s*\([^;{)]*\)\s*\{",
        "timer-patching",
        6,
        "reject",
        "interposes or redefines CUDA timing/synchronisation functions",
    ),
    (
        r"\b(cublas|cublasLt|cudnn)\w*\s*\(",
        "library-call",
        12,
        "warn",
        "calls a vendor library: the speedup may not be this kernel's own",
    ),
    (
        r"__half|half2|__nv_bfloat16|__float2half|__float2bfloat16|nvcuda::wmma|\bmma\.sync|\btf32\b|__nv_fp8",
        "reduced-precision",
        7,
        "warn",
        "uses lower-precision types or tensor-core math: checked against the task's dtype tolerance",
    ),
    (
        r"^\s*(?:static\s+)?__device__\s+(?!const|__forceinline__|inline|static|void|float|double|int|bool|unsigned|"
        r"auto|__half|T\b)[^(;]*;|^\s*static\s+(?!const\b|constexpr\b|inline\b|void\b|__device__\b|__global__\b|"
        r"__forceinline__\b|__host__\b|int\s+\w+\s*\()[\w:<>,\s\*]+\s\**\w+\s*(=[^;]*)?;",
        "stateful",
        11,
        "warn",
        "keeps state between calls (caches or counters are checked at run time)",
    ),
]
TORCH_CPP_OP = re.compile(r"\b(?:at|torch|torch::nn::functional|F)::(\w+)\s*\(")
TORCH_CPP_METHOD = re.compile(r"[\w\)\]]\s*(?:\.|->)\s*(\w+)\s*\(")


def strip_c_comments(src: str) -> str:
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))

    return re.sub(r"//[^\n]*|/\*.*?\*/", blank, src, flags=re.S)


def finding(code: str, hack: int | None, line: int, text: str, message: str, severity: str = "warn") -> Finding:
    return {
        "code": code,
        "hack": hack,
        "line": line,
        "text": text.strip()[:200],
        "message": message,
        "severity": severity,
    }


def torch_op_finding(
    op: str, line: int, text: str, ref_ops: frozenset[str] | set[str], strict: bool, libraries: str
) -> Finding | None:
    """A call of a torch compute op. The task's own ops (what its reference calls) are a
    fallback, except library ops where the task allows libraries; any other compute op is a
    warning: a candidate may compute small things with torch (a per-channel rsqrt before its
    launch), and the runtime trace decides whether torch did the work (own_kernel.py)."""
    if op in NEUTRAL:
        return None
    own_op = op in ref_ops
    if op in LIBRARY_OPS and libraries == "deny" and (own_op or strict):
        return finding(
            "torch-fallback",
            12,
            line,
            text,
            f'calls the library op {op}, and this task forbids libraries ("libraries": "deny"): '
            "refused if a library kernel runs",
        )
    if own_op and op not in LIBRARY_OPS:
        return finding(
            "torch-fallback",
            12,
            line,
            text,
            f"calls the torch op {op}, which the reference computes with: "
            "the trace decides whether its own kernels do the reference's work",
        )
    if op in COMPUTE_OPS or own_op:
        if not strict and not own_op:
            return None
        what = "a library op" if op in LIBRARY_OPS else "a torch compute op"
        return finding(
            "torch-op",
            12,
            line,
            text,
            f"calls {op} ({what}): allowed for part of the work; the profiler checks that its own kernels do the "
            "task's work",
            "warn",
        )
    return None


def check_c(
    source: str,
    torch_ext: bool,
    line_offset: int = 0,
    ref_ops: frozenset[str] | set[str] = frozenset(),
    strict: bool = True,
    libraries: str = "allow",
) -> list[Finding]:
    clean = strip_c_comments(source)
    lines = clean.splitlines()
    raw = source.splitlines()
    out = []
    for pattern, code, hack, severity, message in C_RULES:
        for m in re.finditer(pattern, clean, flags=re.M):
            ln = clean.count("\n", 0, m.start())
            out.append(finding(code, hack, ln + 1 + line_offset, raw[ln] if ln < len(raw) else "", message, severity))
    if torch_ext:
        for i, line in enumerate(lines):
            for m in list(TORCH_CPP_OP.finditer(line)) + list(TORCH_CPP_METHOD.finditer(line)):
                f = torch_op_finding(
                    m.group(1), i + 1 + line_offset, raw[i] if i < len(raw) else "", ref_ops, strict, libraries
                )
                if f is not None:
                    out.append(f)
    return out


BACKEND_FLAG = re.compile(r"^torch\.backends\.")
# torch.compile's settings, set by assignment in honest candidates
# (`torch._inductor.config.coordinate_descent_tuning = True`): process-wide settings, not
# timers or checks (the judge times the baselines in a process of its own)
COMPILE_CONFIG = re.compile(r"^torch\.(?:_dynamo|_inductor|_functorch)\.config\.")


def _is_backend_flag(target):
    """torch.backends.cudnn.benchmark, torch.backends.cuda.matmul.allow_tf32, …: process-wide
    settings that backend_flags.py scopes to the candidate's calls."""
    return bool(BACKEND_FLAG.match(ast.unparse(target)))


def _root(node):
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.value if not isinstance(node, ast.Call) else node.func
    return node.id if isinstance(node, ast.Name) else None


def _is_triton_jit(fn):
    return any("triton" in ast.unparse(d) or ast.unparse(d).startswith("jit") for d in fn.decorator_list)


class _PySource:
    """What the rules below need of a module: its lines, and the torch-op rule's settings."""

    def __init__(
        self, source: str, ref_ops: frozenset[str] | set[str], strict: bool, libraries: str, tree: ast.AST
    ) -> None:
        self.raw = source.splitlines()
        self.ref_ops, self.strict, self.libraries = ref_ops, strict, libraries
        self.owners = _Owners(tree)

    def text(self, node: ast.AST) -> str:
        line = getattr(node, "lineno", 0)
        return self.raw[line - 1] if 0 < line <= len(self.raw) else ""

    def find(self, code: str, hack: int | None, node: ast.AST, message: str, severity: str = "warn") -> Finding:
        return finding(code, hack, getattr(node, "lineno", 0), self.text(node), message, severity)

    def op(self, op: str, node: ast.AST) -> Finding | None:
        return torch_op_finding(
            op, getattr(node, "lineno", 0), self.text(node), self.ref_ops, self.strict, self.libraries
        )


def _imports(node: ast.Import | ast.ImportFrom, m: _PySource) -> list[Finding]:
    out = []
    mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
    for mod in mods:
        top = mod.split(".")[0]
        if top in THREAD_MODULES:
            out.append(
                m.find(
                    "background-thread",
                    4,
                    node,
                    f"imports {mod}: threads still running after a call are refused at run time",
                )
            )
        if top in ("gc", "inspect", "traceback"):
            out.append(
                m.find(
                    "output-memory-reuse",
                    1,
                    node,
                    f"imports {mod}: can reach other code's tensors; the run probes for a reused reference output",
                )
            )
        if top in ("importlib", "builtins"):
            out.append(
                m.find(
                    "timer-patching",
                    6,
                    node,
                    f"imports {mod}: the harness's timers and checks are compared after every call",
                )
            )
        if isinstance(node, ast.ImportFrom) and top == "torch":
            out += [f for alias in node.names if (f := m.op(alias.name, node)) is not None]
        if top == "ctypes":
            out.append(m.find("native-code", None, node, "loads native code with ctypes: checked at run time", "warn"))
    return out


def _try(node: ast.Try, m: _PySource) -> list[Finding]:
    return [
        m.find(
            "torch-fallback",
            12,
            node,
            "try/except: a fallback is refused only if its except branch runs or the trace shows others' "
            "kernels did the work",
        )
    ]


def _class(node: ast.ClassDef, m: _PySource) -> list[Finding]:
    return [
        m.find(
            "fake-tensor", 5, node, "subclasses torch.Tensor: outputs must be plain tensors (checked on every output)"
        )
        for base in node.bases
        if "Tensor" in ast.unparse(base)
    ]


FAKE_TENSOR_NAMES = ("__torch_function__", "__torch_dispatch__", "_make_subclass", "_make_wrapper_subclass")


def _name(node: ast.Name, m: _PySource) -> list[Finding]:
    if node.id not in FAKE_TENSOR_NAMES:
        return []
    return [m.find("fake-tensor", 5, node, f"uses {node.id}: lazy or fake tensors")]


def _function(node: ast.FunctionDef, m: _PySource) -> list[Finding]:
    if node.name not in ("__torch_function__", "__torch_dispatch__"):
        return []
    return [m.find("fake-tensor", 5, node, f"defines {node.name}: lazy or fake tensors")]


# what a chain of attributes passes through to reach another object than the one it starts
# from: a class, a module's or a function's globals (`own.__class__.elapsed_time = …`)
REACH_THROUGH = {
    "__class__",
    "__dict__",
    "__globals__",
    "__builtins__",
    "__mro__",
    "__bases__",
    "__base__",
    "__module__",
}
OWNED_CALLS_EXCEPT = {"getattr", "__import__", "import_module", "type", "vars", "globals", "locals", "super"}


# the roots an assignment may not replace an attribute of (sys is not one: `sys.stdout = …`
# around a build is honest; what reaches the harness through sys.modules is a call's result)
ASSIGN_ROOTS = (TAMPER_ROOTS - {"sys"}) | {"__builtins__", "importlib"}


def _tamper_module(name: str) -> bool:
    return name.split(".")[0] in ASSIGN_ROOTS


class _Owners:
    """Whose object an assignment's target belongs to (issue 33: no rule refuses on a name
    alone). "library": torch, time, numpy, triton, timeit, builtins or the harness, by
    the name it is imported under, or a name bound to one of their objects (`Ev =
    torch.cuda.Event`, `getattr(torch.cuda, "Event")`, `__import__("time")`); "own": the
    candidate's own objects (`self`/`cls`, a method's first parameter, its classes and
    functions, what its own functions and classes return); "unknown": anything else (a
    parameter, what a library call returns)."""

    def __init__(self, tree: ast.AST) -> None:
        self.library: set[str] = set()
        self.own: set[str] = {"self", "cls"}
        self.instances: set[str] = set()
        bound: list[tuple[str, ast.AST]] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if _tamper_module(a.name):
                        self.library.add(a.asname or a.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                if _tamper_module(node.module or ""):
                    self.library |= {a.asname or a.name for a in node.names}
            elif isinstance(node, ast.ClassDef):
                self.own.add(node.name)
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.args.args:
                        self.own.add(item.args.args[0].arg)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.own.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                bound += [(t.id, node.value) for t in targets if isinstance(t, ast.Name)]
        changed = True
        while changed:  # aliases of aliases (`c = torch.cuda; ev = c.Event`)
            changed = False
            for name, value in bound:
                if name not in self.library and self.kind(value) == "library":
                    self.library.add(name)
                    changed = True
        # objects a library's call made (`e = torch.cuda.Event()`): their attributes are the
        # candidate's business, their class (`e.__class__`) is the library's
        self.instances = {
            name for name, value in bound if isinstance(value, ast.Call) and self.kind(value.func) == "library"
        }
        for name, value in bound:
            if name not in self.library and isinstance(value, ast.Call) and self.kind(value) == "own":
                self.own.add(name)
        self.own -= self.library

    def kind(self, node: ast.AST) -> str:
        """library | own | unknown, for the object an expression (a target's value) is."""
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            if isinstance(node, ast.Attribute) and node.attr in REACH_THROUGH:
                inner = node.value
                made = isinstance(inner, ast.Name) and inner.id in self.instances
                return "library" if made or self.kind(inner) == "library" else "unknown"
            node = node.value
        if isinstance(node, ast.Name):
            if node.id in self.library or (node.id in ASSIGN_ROOTS and node.id not in self.own):
                return "library"
            return "own" if node.id in self.own else "unknown"
        if isinstance(node, ast.Call):
            fname = ast.unparse(node.func).split(".")[-1]
            if fname in ("__import__", "import_module"):
                arg = node.args[0] if node.args else None
                named = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None
                return "library" if named is not None and _tamper_module(named) else "unknown"
            if fname in ("getattr", "type") and node.args:
                inner = self.kind(node.args[0])
                if fname == "type" and isinstance(node.args[0], ast.Call):
                    inner = self.kind(node.args[0].func)  # type(torch.cuda.Event()): torch's class
                return inner if inner == "library" else "unknown"
            if fname in OWNED_CALLS_EXCEPT or self.kind(node.func) == "library":
                return "unknown"  # a library's call may return the library's objects (sys.modules.get)
            return "own"  # an object its own code created
        return "unknown"


def _assignment(node: ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete, m: _PySource) -> list[Finding]:
    """Replacing an attribute of torch, time, numpy, triton, timeit, builtins or the harness
    refuses on sight (timer-patching); an attribute of the candidate's own objects
    (`self.norm = nn.LayerNorm(d)`, `self.record = []`) never does, whatever its name; a
    timer's or check's name on an object the source does not tell is a warning, and the
    harness's run-time check of its timers and checks (guards.py) decides."""
    out = []
    targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
    for t in targets:
        if not isinstance(t, ast.Attribute):
            continue
        if _is_backend_flag(t):
            out.append(
                m.find(
                    "global-state",
                    None,
                    node,
                    f"sets {ast.unparse(t)}: the harness applies it around "
                    "the candidate's own calls only (the reference and baselines keep the harness's settings)",
                )
            )
            continue
        if COMPILE_CONFIG.match(ast.unparse(t)):
            out.append(
                m.find(
                    "global-state",
                    None,
                    node,
                    f"sets {ast.unparse(t)}: a torch.compile setting for this process (the judge's baselines run "
                    "in a process of their own)",
                )
            )
            continue
        owner = m.owners.kind(t.value)
        if owner == "library":
            out.append(
                m.find(
                    "timer-patching",
                    6,
                    node,
                    f"replaces {ast.unparse(t)}, an attribute of a library or of the harness: timers and checks must "
                    "stay the harness's own",
                    "reject",
                )
            )
        elif owner == "unknown" and t.attr in TAMPER_ATTRS:
            out.append(
                m.find(
                    "timer-patching",
                    6,
                    node,
                    f"sets {ast.unparse(t)}: if that object is the harness's or a library's, the run-time check of "
                    "the timers and checks refuses it",
                )
            )
    return out


STREAM_ATTRS = ("Stream", "stream", "set_stream", "ExternalStream", "StreamContext")
REACH_ATTRS = (
    "_getframe",
    "modules",
    "get_objects",
    "get_referrers",
    "__dict__",
    "__globals__",
    "f_back",
    "f_locals",
    "__builtins__",
    "_current_frames",
)
REACH_OTHERS_OBJECTS = ("_getframe", "get_objects", "get_referrers", "f_back", "f_locals")


def _attribute(node: ast.Attribute, m: _PySource) -> list[Finding]:
    out = []
    name = ast.unparse(node)
    if node.attr in STREAM_ATTRS and "cuda" in name:
        out.append(
            m.find(
                "side-stream",
                3,
                node,
                f"uses {name}: timing covers every stream, and work the caller's stream never waits for is reported",
            )
        )
    if node.attr in REACH_ATTRS:
        code, hack = ("output-memory-reuse", 1) if node.attr in REACH_OTHERS_OBJECTS else ("timer-patching", 6)
        out.append(
            m.find(
                code,
                hack,
                node,
                f"reaches into {name}: other code's objects or the harness's functions (checked after every call)",
            )
        )
    if node.attr == "as_subclass":
        out.append(m.find("fake-tensor", 5, node, "as_subclass: outputs must be plain tensors"))
    return out


PATCHING_CALLS = ("setattr", "delattr", "globals", "vars", "exec", "eval", "__import__")
NOT_TORCH_ROOTS = ("tl", "triton", "math", "np", "numpy", "os", "sys", "re", "json", "cp", "cupy")


def _call(node: ast.Call, m: _PySource) -> list[Finding]:
    out = []
    fname = ast.unparse(node.func)
    if fname in PATCHING_CALLS:
        out.append(
            m.find(
                "timer-patching",
                6,
                node,
                f"calls {fname}(): the harness's timers and checks are compared after every call",
            )
        )
    if isinstance(node.func, ast.Attribute) and _root(node.func) not in NOT_TORCH_ROOTS:
        f = m.op(node.func.attr, node)
        if f is not None:
            out.append(f)
    return out


def _binop(node: ast.BinOp, m: _PySource) -> list[Finding]:
    f = m.op("matmul", node) if isinstance(node.op, ast.MatMult) else None
    return [] if f is None else [f]


# Each node is put to the first rule for its type (the types do not overlap).
PY_RULES: tuple[tuple[type | tuple[type, ...], Any], ...] = (
    ((ast.Import, ast.ImportFrom), _imports),
    (ast.Try, _try),
    (ast.ClassDef, _class),
    (ast.Name, _name),
    (ast.FunctionDef, _function),
    ((ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete), _assignment),
    (ast.Attribute, _attribute),
    (ast.Call, _call),
    (ast.BinOp, _binop),
)


def check_py(
    source: str, ref_ops: frozenset[str] | set[str] = frozenset(), strict: bool = True, libraries: str = "allow"
) -> list[Finding]:
    """The findings of a Python candidate: each node of its syntax tree put to its rule (Triton
    kernels' bodies left out: their calls are Triton's, not torch's), then the CUDA source in its
    strings (load_inline) to check_c."""
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        return [finding("syntax-error", None, err.lineno or 0, "", f"does not parse: {err.msg}", "reject")]
    m = _PySource(source, ref_ops, strict, libraries, tree)
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_triton_jit(node):
            skip |= {id(n) for n in ast.walk(node)}
    out = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        rule = next((fn for types, fn in PY_RULES if isinstance(node, types)), None)
        if rule is not None:
            out += rule(node, m)
    for node in ast.walk(tree):  # CUDA source inside Python strings (load_inline)
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and ("__global__" in node.value or "#include" in node.value)
        ):
            out += check_c(
                node.value,
                torch_ext=True,
                line_offset=node.lineno - 1,
                ref_ops=ref_ops,
                strict=strict,
                libraries=libraries,
            )
    return out


def check(
    path: str,
    source: str,
    fmt: str,
    ref_ops: frozenset[str] | set[str] = frozenset(),
    strict: bool = True,
    libraries: str = "allow",
) -> StaticRecord:
    if fmt == "py":
        findings = check_py(source, ref_ops, strict, libraries)
    else:
        findings = check_c(source, torch_ext=(fmt == "torch-ext"), ref_ops=ref_ops, strict=strict, libraries=libraries)
    seen, unique = set(), []
    for f in findings:  # one finding per rule and line, however many matches it has
        key = (f["code"], f["line"], f["message"])
        if key not in seen:
            seen.add(key)
            unique.append(f)
    findings = sorted(unique, key=lambda f: (f["severity"] != "reject", f["line"]))
    ok = not any(f["severity"] == "reject" for f in findings)
    return {"schema": 1, "kind": "static", "ok": ok, "format": fmt, "findings": findings}
