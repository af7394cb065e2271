"""Whose kernel ran is decided by identity, not by name (issue 33, point 1).

Real objects built with nvcc (sm_90: it compiles here, nothing runs), their symbols read as
the harness reads them (kernel_symbols.py), and profiler-like traces fed to the own-kernel
judge: a candidate that calls its kernel `k`, `kernel`, `elementwise_kernel`,
`softmax_kernel` or `vectorized_elementwise_kernel` and whose launched kernels are PyTorch's
is a fallback, the torch kernels named; an honest kernel that shares a name with a torch
kernel is its own. The record never says both "none of its kernels ran" and "its own kernels
did the work" (verdict.py draws the second from the judge's ownKernels).
"""

import os
import shutil
import subprocess
import tempfile
import types
import unittest

from evokernel_harness import evidence, kernel_symbols, own_kernel, verdict

NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)

# the kernels PyTorch launches for the fused_elementwise and softmax references, as the
# profiler names them (demangled, templates and parameter lists)
SIG = (
    "at::native::sigmoid_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}"
    "::operator()() const::{lambda(float)#1}"
)
TORCH_SIGMOID = (
    f"void at::native::vectorized_elementwise_kernel<4, {SIG}, at::detail::Array<char*, 2> >"
    f"(int, {SIG}, at::detail::Array<char*, 2>)"
)
TORCH_GELU = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, "
    "at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, "
    "at::detail::Array<char*, 2>)"
)
TORCH_MUL = (
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, "
    "float, float, at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, "
    "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > const&)"
    "::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float, "
    "at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, at::native::BinaryFunctor<float, "
    "float, float, at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1})"
)
TORCH_SOFTMAX = (
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
    "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)"
)
FUSED_REF = {TORCH_GELU: 120.0, TORCH_SIGMOID: 100.0, TORCH_MUL: 110.0}
SOFTMAX_REF = {TORCH_SOFTMAX: 300.0}

LAUNCH = "void launch(float* x, float* y, int n) {{ {call}; }}\n"
SOURCES = {
    # name: (source, the profiler's name for its kernel when it runs)
    "k": (
        "__global__ void k(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;"
        " if (i < n) y[i] = x[i] / (1.f + expf(-x[i])); }\n" + LAUNCH.format(call="k<<<1, 256>>>(x, y, n)"),
        "k(float const*, float*, int)",
    ),
    "kernel": (
        "__global__ void kernel(const float* x, float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = x[i]; }\n"
        + LAUNCH.format(call="kernel<<<1, 256>>>(x, y, n)"),
        "kernel(float const*, float*, int)",
    ),
    "elementwise_kernel": (
        "template <int B> __global__ void elementwise_kernel(const float* x, float* y, int n) {"
        " int i = blockIdx.x * B + threadIdx.x; if (i < n) y[i] = 2.f * x[i]; }\n"
        + LAUNCH.format(call="elementwise_kernel<128><<<1, 128>>>(x, y, n)"),
        "void elementwise_kernel<128>(float const*, float*, int)",
    ),
    # named and placed as PyTorch's own: an exact name match with the kernel torch launches
    # must not make torch's kernel the candidate's
    "vectorized_elementwise_kernel": (
        "namespace at { namespace native {\n"
        "template <int vec, typename F> __global__ void vectorized_elementwise_kernel(int n, F f) { f(n); }\n"
        "}}\nstruct Sig { __device__ void operator()(int) const {} };\n"
        "void launch(float*, float*, int n) { at::native::vectorized_elementwise_kernel<4><<<1, 1>>>(n, Sig{}); }\n",
        "void at::native::vectorized_elementwise_kernel<4, Sig>(int, Sig)",
    ),
    "softmax_kernel": (
        "__global__ void softmax_kernel(const float* x, float* y, int n) {"
        " __shared__ float m; if (threadIdx.x == 0) { m = -INFINITY; for (int j = 0; j < n; ++j) m = fmaxf(m, x[j]);"
        " float s = 0; for (int j = 0; j < n; ++j) s += expf(x[j] - m); for (int j = 0; j < n; ++j)"
        " y[j] = expf(x[j] - m) / s; } }\n" + LAUNCH.format(call="softmax_kernel<<<1, 32>>>(x, y, n)"),
        "softmax_kernel(float const*, float*, int)",
    ),
}


@unittest.skipUnless(NVCC, "nvcc is not installed")
class KernelIdentityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="evk-identity-")
        cls.objects = {}
        procs = {}
        for name, (source, _) in SOURCES.items():
            src = os.path.join(cls.tmp, f"{name}.cu")
            with open(src, "w") as f:
                f.write(source)
            lib = os.path.join(cls.tmp, f"{name}.so")
            cmd = [NVCC, "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", "-o", lib, src]
            procs[name] = (lib, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        for name, (lib, proc) in procs.items():
            out, _ = proc.communicate(timeout=600)
            if proc.returncode != 0:
                raise AssertionError(f"nvcc failed for {name}:\n{out}")
            cls.objects[name] = lib

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def own(self, name):
        """The candidate's OwnKernels as the harness reads them from its torch extension."""
        cand = types.SimpleNamespace(format="torch-ext", artifact=self.objects[name], kernels={name}, module=None)
        return own_kernel.own_kernels(cand)

    def test_the_symbols_of_a_built_object_are_its_kernels_mangled_and_demangled(self):
        for name, (_, profiled) in SOURCES.items():
            with self.subTest(candidate=name):
                own = self.own(name)
                self.assertIn(self.objects[name], own.objects)
                self.assertIn(profiled, own.names)
                self.assertTrue(any(n.startswith("_Z") for n in own.names))

    def test_torch_kernels_never_count_as_a_kernel_named_like_them(self):
        """The fallback on every configuration: only PyTorch's kernels ran, and the candidate's
        kernel name is a substring of theirs (`k`, `kernel`, `elementwise_kernel`, …)."""
        for name in ("k", "kernel", "elementwise_kernel", "vectorized_elementwise_kernel"):
            with self.subTest(candidate=name):
                own = self.own(name)
                traces = [(c, dict(FUSED_REF), FUSED_REF) for c in ("8192x8192", "4096x4096", "odd-4097x5003")]
                v = own_kernel.judge(traces, own)
                self.assertFalse(v["ok"], v["detail"])
                self.assertIn(f"none of its kernels ({name}) ran on configuration 8192x8192", v["detail"])
                self.assertIn("at::native::", v["detail"])  # the torch kernels that ran are named
                self.assertEqual(v["shares"]["own"], 0.0)
                self.assertEqual(v["ownKernels"], [])
                for torch_name in FUSED_REF:
                    self.assertEqual(own_kernel.classify(torch_name, own), "torch")

    def test_a_fallback_on_one_configuration_is_refused_naming_it(self):
        own = self.own("k")
        ran = {SOURCES["k"][1]: 90.0}
        traces = [
            ("8192x8192", ran, FUSED_REF),
            ("4096x4096", ran, FUSED_REF),
            ("odd-4097x5003", dict(FUSED_REF), FUSED_REF),
        ]
        v = own_kernel.judge(traces, own)
        self.assertFalse(v["ok"])
        self.assertIn("ran on configuration odd-4097x5003", v["detail"])
        self.assertIn("vectorized_elementwise_kernel<4, at::native::", v["detail"])

    def test_a_softmax_kernel_named_softmax_kernel_that_falls_back_is_refused(self):
        v = own_kernel.judge([("8192x8192", dict(SOFTMAX_REF), SOFTMAX_REF)], self.own("softmax_kernel"))
        self.assertFalse(v["ok"])
        self.assertIn("cunn_SoftMaxForward", v["detail"])

    def test_an_honest_kernel_sharing_a_name_with_torch_counts_as_its_own(self):
        """Its own softmax_kernel (PyTorch has kernels of that name: the profiler's full name
        says whose), and its own `elementwise_kernel<128>` beside torch's."""
        for name in ("softmax_kernel", "elementwise_kernel", "k"):
            with self.subTest(candidate=name):
                profiled = SOURCES[name][1]
                v = own_kernel.judge([("c", {profiled: 250.0}, SOFTMAX_REF)], self.own(name))
                self.assertTrue(v["ok"], v["detail"])
                self.assertEqual(v["ownKernels"], [profiled])
                self.assertEqual(v["shares"]["own"], 1.0)

    def test_a_kernel_named_as_pytorch_names_its_own_never_counts_as_the_candidates(self):
        """Built in namespace at::native by the candidate: the name is PyTorch's, so is the kernel."""
        own = self.own("vectorized_elementwise_kernel")
        profiled = SOURCES["vectorized_elementwise_kernel"][1]
        self.assertIn(profiled, own.names)
        self.assertNotEqual(own_kernel.classify(profiled, own), "own")

    def test_the_verdict_is_torch_fallback_naming_the_torch_kernels_and_never_says_its_kernels_did_the_work(self):
        """The issue's record: an except branch that ran 35 times, torch's sigmoid in the trace."""
        own = own_kernel.judge([("8192x8192", {TORCH_SIGMOID: 100.0}, {TORCH_SIGMOID: 100.0})], self.own("k"))
        rec = evidence.Recorder("/nonexistent/cand.py")
        handled = {"phase": "verify", "line": 12, "type": "RuntimeError", "message": "row too long", "count": 35}
        rec.kinds = {(handled["phase"], handled["line"], handled["type"]): handled}
        cand = types.SimpleNamespace(evidence=rec, flags=types.SimpleNamespace(changes=lambda: {}, describe=lambda: []))
        task = types.SimpleNamespace(own_kernels="require", own_kernels_rule=lambda: "KernelBench's rule")
        passed = {
            "ok": True,
            "status": "passed",
            "reason": None,
            "hack": None,
            "message": "",
            "warnings": [],
            "checks": [],
        }
        out = verdict.after_verification(passed, task, cand, "cuda", own)
        self.assertEqual((out["ok"], out["reason"]), (False, "torch-fallback"))
        self.assertIn("none of its kernels (k) ran", out["message"])
        self.assertIn("sigmoid_kernel_cuda", out["message"])
        self.assertFalse(any("did the work" in w for w in out["warnings"]), out["warnings"])


class ModuleKernelsTest(unittest.TestCase):
    """Triton kernels are the candidate's by the module that holds them (its JITFunctions)."""

    def jit(self, name, compiled):
        kernel = types.SimpleNamespace(name=compiled, metadata={"name": compiled})
        cls = type("JITFunction", (), {"__module__": "triton.runtime.jit"})
        fn = cls()
        fn.__name__ = name
        fn.fn = lambda: None
        fn.cache = {0: {"key": kernel}}
        tuner = type("Autotuner", (), {"__module__": "triton.runtime.autotuner"})()
        tuner.fn = fn
        tuner.cache = {}
        return tuner

    def test_the_kernels_a_module_compiled_are_its_own_by_exact_name(self):
        module = types.SimpleNamespace(softmax_kernel=self.jit("softmax_kernel", "softmax_kernel_0d1d2"), x=3)
        names = kernel_symbols.module_kernels(module)
        self.assertEqual(names, {"softmax_kernel", "softmax_kernel_0d1d2"})
        own = own_kernel.OwnKernels(frozenset(names))
        self.assertEqual(own_kernel.classify("softmax_kernel", own), "own")
        self.assertEqual(own_kernel.classify(TORCH_SOFTMAX, own), "torch")


class MappedObjectsTest(unittest.TestCase):
    def test_the_python_installation_and_the_system_are_never_a_candidates_build(self):
        import torch

        lib = os.path.join(os.path.dirname(torch.__file__), "lib", "libc10.so")
        self.assertTrue(kernel_symbols.is_system_object(lib))
        self.assertTrue(kernel_symbols.is_system_object("/usr/lib/x86_64-linux-gnu/libc.so.6"))
        self.assertFalse(kernel_symbols.is_system_object(os.path.join(tempfile.gettempdir(), "ext", "k.so")))
        self.assertFalse(any(os.path.basename(p).startswith("libc10") for p in kernel_symbols.candidate_objects()))


if __name__ == "__main__":
    unittest.main()
