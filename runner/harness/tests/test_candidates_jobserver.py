"""The machine-wide build pool (compile slots across processes), the per-hash build lock,
and the torch-extension fast path of ccwrap (binding-unit object cache, precompiled header,
fallback to the command torch wrote), with stand-in compilers: no GPU, no torch headers."""

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.normpath(os.path.join(HERE, ".."))
CCWRAP = os.path.join(HARNESS, "evokernel_harness", "candidates", "ccwrap.py")


def run_py(code, env=None, wait=True):
    full = {**os.environ, "PYTHONPATH": HARNESS, **(env or {})}
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if wait:
        out, _ = proc.communicate(timeout=900)
        return proc.returncode, out
    return proc


def max_overlap(intervals):
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    now = peak = 0
    for _, step in events:
        now += step
        peak = max(peak, now)
    return peak


class SlotTest(unittest.TestCase):
    def test_slots_limit_concurrency_across_processes(self):
        with tempfile.TemporaryDirectory() as tmp:
            log = os.path.join(tmp, "log")
            code = f"""
                import os, time
                from evokernel_harness.candidates import jobserver
                with jobserver.slot(1):
                    start = time.time()
                    time.sleep(0.4)
                    end = time.time()
                with open({log!r}, "a") as f:
                    f.write(f"{{start}} {{end}}\\n")
            """
            env = {"EVOKERNEL_BUILD_SLOTS": os.path.join(tmp, "slots"), "EVOKERNEL_BUILD_JOBS": "2"}
            procs = [run_py(code, env, wait=False) for _ in range(6)]
            for p in procs:
                out, _ = p.communicate(timeout=600)
                self.assertEqual(p.returncode, 0, out)
            with open(log) as f:
                intervals = [tuple(map(float, line.split())) for line in f]
            self.assertEqual(len(intervals), 6)
            # 1e-3 s slack: one process's end and the next one's start may share a tick
            shrunk = [(s + 1e-3, e - 1e-3) for s, e in intervals]
            self.assertEqual(max_overlap(shrunk), 2)

    def test_a_wide_build_takes_all_or_nothing_and_a_dead_holder_frees_its_slot(self):
        from evokernel_harness.candidates import jobserver

        with tempfile.TemporaryDirectory() as tmp:
            env = {"EVOKERNEL_BUILD_SLOTS": tmp, "EVOKERNEL_BUILD_JOBS": "3"}
            holder = run_py(
                """
                import time
                from evokernel_harness.candidates import jobserver
                with jobserver.slot(2):
                    print("held", flush=True)
                    time.sleep(60)
            """,
                env,
                wait=False,
            )
            self.assertEqual(holder.stdout.readline().strip(), "held")
            with jobserver.slot(1, total=3, folder=tmp) as got:
                self.assertEqual(len(got), 1)
            holder.kill()  # killed while holding: the kernel drops its locks
            holder.communicate()
            started = time.time()
            with jobserver.slot(3, total=3, folder=tmp) as got:
                self.assertEqual(sorted(got), [0, 1, 2])
            self.assertLess(time.time() - started, 5)


class SameHashTest(unittest.TestCase):
    def test_two_builds_of_one_hash_compile_once(self):
        with tempfile.TemporaryDirectory() as tmp:
            cand = os.path.join(tmp, "cand.py")
            with open(cand, "w") as f:
                f.write("def forward(x):\n    return x\n")
            count = os.path.join(tmp, "compiles")
            code = f"""
                import json, time
                from evokernel_harness.candidates import build as b
                real = b._build_py
                def counted(*args):
                    with open({count!r}, "a") as f:
                        f.write("x\\n")
                    time.sleep(1.0)
                    return real(*args)
                b._build_py = counted
                r = b.build({cand!r}, {os.path.join(tmp, "cache")!r})
                print(json.dumps({{"ok": r["ok"], "cached": r["cached"], "artifact": r["artifact"]}}))
            """
            procs = [run_py(code, wait=False) for _ in range(2)]
            records = []
            for p in procs:
                out, _ = p.communicate(timeout=600)
                self.assertEqual(p.returncode, 0, out)
                records.append(json.loads(out.strip().splitlines()[-1]))
            with open(count) as f:
                self.assertEqual(len(f.readlines()), 1)
            self.assertTrue(all(r["ok"] for r in records))
            self.assertEqual(sorted(r["cached"] for r in records), [False, True])
            self.assertEqual(records[0]["artifact"], records[1]["artifact"])


FAKE_CXX = r"""#!/bin/sh
# stand-in compiler: records each call; "-o OUT" gets a file naming the source and flags
echo "$*" >> "$FAKE_LOG"
case " $* " in *" -x c++-header "*) [ -n "$FAKE_PCH_FAILS" ] && { echo "pch: no" >&2; exit 1; } ;; esac
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
[ -n "$out" ] && printf '%s\n' "$*" > "$out"
exit 0
"""

BINDINGS = (
    "#include <torch/extension.h>\ntorch::Tensor forward(torch::Tensor x);\n"
    'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\nm.def("forward", torch::wrap_pybind_function(forward), '
    '"forward");\n}\n'
)


class FastPathTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.cxx = os.path.join(self.tmp, "fakecxx")
        with open(self.cxx, "w") as f:
            f.write(FAKE_CXX)
        os.chmod(self.cxx, 0o755)
        self.log = os.path.join(self.tmp, "calls")
        self.cache = os.path.join(self.tmp, "cache")
        self.env = {
            "FAKE_LOG": self.log,
            "EVOKERNEL_CCWRAP_CACHE": self.cache,
            "EVOKERNEL_CCWRAP_SALT": "t",
            "EVOKERNEL_BUILD_SLOTS": os.path.join(self.tmp, "slots"),
        }

    def tearDown(self):
        import shutil

        shutil.rmtree(self.tmp, ignore_errors=True)

    def compile(self, source, name="ext", env=None):
        """One load_inline-style build folder: main.cpp compiled as ninja would."""
        folder = os.path.join(self.tmp, f"build{len(os.listdir(self.tmp))}")
        os.makedirs(folder)
        src = os.path.join(folder, "main.cpp")
        with open(src, "w") as f:
            f.write(source)
        out = os.path.join(folder, "main.o")
        args = [
            "-MMD",
            "-MF",
            out + ".d",
            f"-DTORCH_EXTENSION_NAME={name}",
            "-fPIC",
            "-std=c++17",
            "-c",
            src,
            "-o",
            out,
        ]
        proc = subprocess.run(
            [sys.executable, CCWRAP, "cxx", self.cxx, *args],
            env={**os.environ, **self.env, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertTrue(os.path.exists(out))
        return proc.stdout

    def calls(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return f.read().splitlines()

    def test_same_bindings_hit_the_object_cache_different_bindings_miss(self):
        first = self.compile(BINDINGS)
        self.assertIn("precompiled <torch/extension.h>", first)
        self.assertEqual(len([c for c in self.calls() if "c++-header" in c]), 1)
        self.assertTrue(all("-include" in c for c in self.calls() if "c++-header" not in c))
        n = len(self.calls())
        # another candidate, same bindings (its kernel lives in cuda.cu): no compiler at all
        again = self.compile(BINDINGS)
        self.assertIn("from the object cache", again)
        self.assertEqual(len(self.calls()), n)
        # different declarations: a miss, compiled with the same precompiled header
        other = self.compile(BINDINGS.replace("torch::Tensor x", "torch::Tensor x, double a"))
        self.assertNotIn("object cache", other)
        self.assertEqual(len(self.calls()), n + 1)
        self.assertEqual(len([c for c in self.calls() if "c++-header" in c]), 1)
        # the extension's name is on the command line and in PyInit_<name>: part of the key
        self.compile(BINDINGS, name="other")
        self.assertEqual(len(self.calls()), n + 2)

    def test_fallbacks_compile_the_command_as_torch_wrote_it(self):
        out = self.compile(BINDINGS, env={"FAKE_PCH_FAILS": "1"})
        self.assertIn("could not precompile", out)
        plain = [c for c in self.calls() if "c++-header" not in c]
        self.assertEqual(len(plain), 1)
        self.assertNotIn("-include", plain[0])
        local = self.compile('#include "mine.h"\n' + BINDINGS)
        self.assertIn("includes a local header", local)
        before = len(self.calls())
        self.compile(BINDINGS.replace("x)", "y)"), env={"EVOKERNEL_FASTPATH": "0"})
        self.assertEqual(len(self.calls()), before + 1)
        self.assertNotIn("-include", self.calls()[-1])

    def test_queries_pass_straight_through(self):
        proc = subprocess.run(
            [sys.executable, CCWRAP, "cxx", self.cxx, "-v"],
            env={**os.environ, **self.env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertEqual(self.calls(), ["-v"])


def _has_torch():
    try:
        import torch  # noqa: F401 — imported only to learn whether it imports
    except ImportError:
        return False
    return True


@unittest.skipUnless(_has_torch(), "needs torch")
class ExtensionEnvTest(unittest.TestCase):
    def setUp(self):
        self.saved = dict(os.environ)

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.saved)

    def test_a_build_gets_its_own_folder_and_the_wrappers_and_a_load_gets_them_back(self):
        from evokernel_harness.candidates.build import apply_extension_env, extension_env

        with tempfile.TemporaryDirectory() as cache:
            out_dir = os.path.join(cache, "abc")
            os.makedirs(out_dir)
            os.environ.pop("EVOKERNEL_FASTPATH", None)
            os.environ["TORCH_CUDA_ARCH_LIST"] = "9.0"  # as the build sets it
            self.assertEqual(extension_env(out_dir, cache), "")
            self.assertEqual(os.environ["TORCH_EXTENSIONS_DIR"], os.path.join(out_dir, "torch_extensions"))
            cxx = os.environ["CXX"]
            self.assertIn("c++", os.path.basename(cxx))  # torch checks the name
            self.assertTrue(os.access(cxx, os.X_OK))
            self.assertTrue(cxx.startswith(os.path.join(cache, "bin")))
            with open(cxx) as f:
                self.assertIn("ccwrap.py", f.read())
            # a second build does not wrap the wrapper
            other = os.path.join(cache, "def")
            os.makedirs(other)
            extension_env(other, cache)
            self.assertEqual(os.environ["CXX"], cxx)
            for name in ("CXX", "TORCH_EXTENSIONS_DIR", "EVOKERNEL_CCWRAP_CACHE", "TORCH_CUDA_ARCH_LIST"):
                os.environ.pop(name, None)
            apply_extension_env(os.path.join(out_dir, "candidate.py"))
            self.assertEqual(os.environ["CXX"], cxx)
            # the load writes the same -gencode flags into build.ninja: no rebuild
            self.assertEqual(os.environ["TORCH_CUDA_ARCH_LIST"], "9.0")
            self.assertEqual(os.environ["TORCH_EXTENSIONS_DIR"], os.path.join(out_dir, "torch_extensions"))

    def test_fastpath_none_sets_only_the_folder(self):
        from evokernel_harness.candidates.build import extension_env

        with tempfile.TemporaryDirectory() as cache:
            out_dir = os.path.join(cache, "abc")
            os.makedirs(out_dir)
            os.environ["EVOKERNEL_FASTPATH"] = "none"
            os.environ.pop("CXX", None)
            os.environ.pop("TORCH_CUDA_ARCH_LIST", None)
            self.assertIn("no compiler wrappers", extension_env(out_dir, cache))
            self.assertNotIn("CXX", os.environ)
            with open(os.path.join(out_dir, "extension-env.json")) as f:
                self.assertEqual(list(json.load(f)), ["TORCH_EXTENSIONS_DIR"])


@unittest.skipUnless(
    os.environ.get("EVOKERNEL_SLOW_TESTS") == "1" and _has_torch(),
    "compiles torch headers (minutes on two cores): EVOKERNEL_SLOW_TESTS=1",
)
class RealInlineBuildTest(unittest.TestCase):
    def test_two_candidates_with_the_same_bindings_compile_them_once(self):
        body = (
            "from torch.utils.cpp_extension import load_inline\n"
            "_ext = load_inline(name='evk_cpu_add', functions=['forward'],\n"
            "                   cpp_sources='torch::Tensor forward(torch::Tensor x) { return x + 1; }')\n"
            "def forward(x):\n    return _ext.forward(x)\n"
        )
        with tempfile.TemporaryDirectory() as tmp:
            env = {"EVOKERNEL_BUILD_SLOTS": os.path.join(tmp, "slots")}
            records = []
            for i in range(2):  # a process per build, as the CLI runs them
                cand = os.path.join(tmp, f"cand{i}.py")
                with open(cand, "w") as f:
                    f.write(f"# candidate {i}\n" + body)
                code, out = run_py(
                    f"""
                    import json
                    from evokernel_harness.candidates.build import build
                    print(json.dumps(build({cand!r}, {os.path.join(tmp, "cache")!r})))
                """,
                    env,
                )
                self.assertEqual(code, 0, out[-3000:])
                records.append(json.loads(out.strip().splitlines()[-1]))
            self.assertTrue(all(r["ok"] for r in records), records[0]["log"][-3000:])
            self.assertIn("precompiled <torch/extension.h>", records[0]["log"])
            self.assertIn("from the object cache", records[1]["log"])
            # loaded again elsewhere (the verify child): up to date, nothing compiled
            code, out = run_py(
                f"""
                import time, torch
                from evokernel_harness.candidates.build import apply_extension_env
                from evokernel_harness.pyload import load_module
                apply_extension_env({records[1]["artifact"]!r})
                print(load_module({records[1]["artifact"]!r}, "again").forward(torch.zeros(2)).tolist())
            """,
                env,
            )
            self.assertEqual(code, 0, out[-3000:])
            self.assertIn("[1.0, 1.0]", out)


if __name__ == "__main__":
    unittest.main()
