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
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=full,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if wait:
        out, _ = proc.communicate(timeout=60)
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
                out, _ = p.communicate(timeout=60)
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
            holder = run_py("""
                import time
                from evokernel_harness.candidates import jobserver
                with jobserver.slot(2):
                    print("held", flush=True)
                    time.sleep(60)
            """, env, wait=False)
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
                out, _ = p.communicate(timeout=60)
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

BINDINGS = "#include <torch/extension.h>\ntorch::Tensor forward(torch::Tensor x);\n" \
    "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\nm.def(\"forward\", torch::wrap_pybind_function(forward), \"forward\");\n}\n"


class FastPathTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.cxx = os.path.join(self.tmp, "fakecxx")
        with open(self.cxx, "w") as f:
            f.write(FAKE_CXX)
        os.chmod(self.cxx, 0o755)
        self.log = os.path.join(self.tmp, "calls")
        self.cache = os.path.join(self.tmp, "cache")
        self.env = {"FAKE_LOG": self.log, "EVOKERNEL_CCWRAP_CACHE": self.cache, "EVOKERNEL_CCWRAP_SALT": "t",
                    "EVOKERNEL_BUILD_SLOTS": os.path.join(self.tmp, "slots")}

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
        args = ["-MMD", "-MF", out + ".d", f"-DTORCH_EXTENSION_NAME={name}", "-fPIC", "-std=c++17",
                "-c", src, "-o", out]
        proc = subprocess.run([sys.executable, CCWRAP, "cxx", self.cxx, *args], env={**os.environ, **self.env, **(env or {})},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
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
        proc = subprocess.run([sys.executable, CCWRAP, "cxx", self.cxx, "-v"], env={**os.environ, **self.env},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertEqual(self.calls(), ["-v"])


if __name__ == "__main__":
    unittest.main()
