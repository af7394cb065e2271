"""Issue 33.4: each candidate gets a private writable working folder (workdir.py). A candidate
that builds into a relative folder or writes a scratch file works; what it writes reaches
neither the folder the harness started in nor the next candidate (two evaluate requests in
one worker); the folder is gone afterwards; a failed extension build into a relative folder is
told in the compiler's words. The same through the real sandbox (whose root is read-only):
test/sandbox-workdir.test.ts."""

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import unittest

from evokernel_harness import workdir
from evokernel_harness.command_request import DeviceRequest, VerifyRequest

from .test_worker import Server

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
HARNESS = os.path.join(REPO, "runner", "harness")
SMALL_SOFTMAX = os.path.join(REPO, "test", "fixtures", "tasks", "small_softmax")
# builds into a relative folder at import (a stand-in for load_inline(build_directory=
# "cuda_extensions")), and raises where a command has to build again or finds a later
# command's file: the sandbox's test uses it too (test/security/sandbox-workdir.test.ts)
BUILDS_RELATIVE = os.path.join(REPO, "test", "security", "fixtures", "workdir", "builds_relative.py")

# builds into a relative folder and keeps a scratch file there, as published candidates do
WRITES = textwrap.dedent(
    """
    import os

    import torch

    os.makedirs("build/cuda_code", exist_ok=True)
    with open("build/cuda_code/kernel.cu", "w") as f:
        f.write("// scratch")
    with open("left-by-a.txt", "w") as f:
        f.write("a")


    def forward(x):
        with open("build/cuda_code/kernel.cu") as f:
            assert f.read() == "// scratch"
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)
    """
)
# refuses to work where anything another candidate wrote is in sight
LOOKS = textwrap.dedent(
    """
    import os

    import torch

    SEEN = sorted(os.listdir("."))


    def forward(x):
        if SEEN or os.path.exists("left-by-a.txt"):
            raise RuntimeError(f"another candidate's files are here: {SEEN}")
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)
    """
)
# an extension built into a relative folder, whose source does not compile; the fallback runs
BROKEN_BUILD = textwrap.dedent(
    """
    import os

    import torch
    from torch.utils.cpp_extension import load_inline

    try:
        os.makedirs("cuda_extensions", exist_ok=True)
        ext = load_inline(
            name="evk_workdir_broken",
            cpp_sources="torch::Tensor forward_cpu(torch::Tensor x) { return undeclared_thing(x); }",
            functions=["forward_cpu"],
            build_directory="cuda_extensions",
        )
    except Exception:
        ext = None


    def forward(x):
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)
    """
)


def write(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text)
    return path


class WorkdirTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.start = os.path.join(self.tmp, "started-here")  # the harness's cwd at start
        self.scratch = os.path.join(self.tmp, "tmp")  # its TMPDIR: where private folders go
        os.mkdir(self.start)
        os.mkdir(self.scratch)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def harness(self, *args, out):
        """The record of `python -m evokernel_harness ARGS --out OUT`, run where the harness
        started (OUT relative to it, or absolute)."""
        env = {**os.environ, "PYTHONPATH": HARNESS, "EVOKERNEL_GPU_LOCKS": "off", "TMPDIR": self.scratch}
        proc = subprocess.run(
            [sys.executable, "-m", "evokernel_harness", *args, "--out", out],
            capture_output=True,
            text=True,
            env=env,
            cwd=self.start,
            timeout=1800,
        )
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        with open(os.path.join(self.start, out)) as f:
            return json.load(f)

    def verify(self, candidate, *extra):
        return self.harness(
            "verify",
            *("--device", "cpu", "--seed", "7", "--task", SMALL_SOFTMAX, "--candidate", candidate, *extra),
            out=os.path.join(self.tmp, "record.json"),
        )

    def test_a_candidate_that_writes_relative_paths_passes_and_leaves_nothing(self):
        rec = self.verify(write(self.tmp, "writes.py", WRITES), "--cache", os.path.join(self.tmp, "cache"))
        self.assertTrue(rec["ok"], rec)
        self.assertEqual(os.listdir(self.start), [], "the candidate wrote where the harness started")
        self.assertEqual(
            [n for n in os.listdir(self.scratch) if n.startswith(workdir.PREFIX)], [], "the private folder stayed"
        )
        cache = os.path.join(self.tmp, "cache")
        for _, dirs, files in os.walk(cache):
            self.assertNotIn("left-by-a.txt", files)
            self.assertNotIn("cuda_code", dirs)

    def test_a_failed_build_into_a_relative_folder_is_told_in_the_compilers_words(self):
        candidate = write(self.tmp, "broken_build.py", BROKEN_BUILD)
        # --artifact: loaded as it is, so the extension is compiled once (at load), not twice
        rec = self.verify(candidate, "--artifact", candidate)
        told = [w for w in rec["warnings"] if "extension build failed" in w]
        self.assertTrue(told, rec["warnings"])
        # the compiler ran in the candidate's folder and its error is what the record says
        # (here the CPU build of torch has no headers, so it is the include; with them, the
        # undeclared name)
        self.assertRegex(told[0], r"cuda_extensions/main\.cpp:\d+:\d+: (fatal )?error")
        self.assertNotIn("Read-only", " ".join(rec["warnings"]) + rec["message"])
        self.assertEqual(os.listdir(self.start), [])

    def test_what_the_build_stage_built_in_its_folder_is_found_at_the_same_path_by_each_command_after(self):
        cache = os.path.join(self.tmp, "cache")
        build = self.harness(
            "build", "--candidate", BUILDS_RELATIVE, "--cache", cache, out=os.path.join(self.tmp, "build.json")
        )
        self.assertTrue(build["ok"], build)
        self.assertIn("evk-workdir: its working folder (", build["log"])
        artifact = build["artifact"]
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(artifact), workdir.WORKDIR_SNAPSHOT)))
        # twice: what the first verification wrote in its folder is not there for the second
        for _ in range(2):
            rec = self.verify(artifact, "--artifact", artifact)
            self.assertTrue(rec["ok"], rec)
        self.assertEqual(os.listdir(self.start), [])
        self.assertEqual([n for n in os.listdir(self.scratch) if n.startswith(workdir.PREFIX)], [])

    @unittest.skipIf(shutil.which("ninja") is None or shutil.which("gcc") is None, "needs ninja and gcc")
    def test_ninja_finds_a_build_in_the_kept_folder_up_to_date(self):
        # torch's load_inline runs ninja in every new process; its deps log keeps each object's
        # time to the nanosecond, and an object a hair newer than that is built again: a time
        # restored through a float was, in 12 builds of 20 (2026-11-29)
        for _ in range(10):
            build_dir = tempfile.mkdtemp(dir=self.tmp)
            with workdir.kept(build_dir):
                here = os.getcwd()
                os.makedirs("ext")
                write("ext", "h.h", "#define X 1\n")
                write("ext", "main.c", '#include "h.h"\nint f(void) { return X; }\n')
                write(
                    "ext",
                    "build.ninja",
                    "rule cc\n  command = gcc -MMD -MF $out.d -c $in -o $out\n  depfile = $out.d\n  deps = gcc\n"
                    f"build {here}/ext/main.o: cc {here}/ext/main.c\n",
                )
                subprocess.run(["ninja", "-C", "ext"], check=True, capture_output=True)
            folder = workdir.kept_folder(build_dir)
            os.mkdir(folder)
            try:
                self.assertTrue(workdir.restore_snapshot(build_dir, folder))
                plan = subprocess.run(
                    ["ninja", "-C", os.path.join(folder, "ext"), "-n", "-d", "explain"], capture_output=True, text=True
                )
                self.assertIn("no work to do", plan.stdout, plan.stderr)
            finally:
                shutil.rmtree(folder)

    def test_a_snapshot_that_is_not_the_harness_own_is_not_unpacked(self):
        build_dir = os.path.join(self.tmp, "build")
        os.mkdir(build_dir)
        outside = os.path.join(self.tmp, "outside")
        with tarfile.open(os.path.join(build_dir, workdir.WORKDIR_SNAPSHOT), "w") as tar:
            link = tarfile.TarInfo("cuda_extensions")
            link.type, link.linkname = tarfile.SYMTYPE, outside
            tar.addfile(link)
            data = b"x"
            escape = tarfile.TarInfo("../escaped")
            escape.size = len(data)
            tar.addfile(escape, io.BytesIO(data))
        folder = os.path.join(self.tmp, "kept")
        os.mkdir(folder)
        self.assertFalse(workdir.restore_snapshot(build_dir, folder))
        self.assertEqual(os.listdir(folder), [])
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "escaped")))
        self.assertFalse(os.path.exists(outside))

    def test_a_snapshot_keeps_files_and_folders_with_their_times_and_leaves_links_out(self):
        build_dir, folder, back = (os.path.join(self.tmp, name) for name in ("build", "folder", "back"))
        for name in (build_dir, folder, back):
            os.mkdir(name)
        os.makedirs(os.path.join(folder, "cuda_extensions"))
        write(os.path.join(folder, "cuda_extensions"), "main.o", "object")
        os.utime(os.path.join(folder, "cuda_extensions", "main.o"), (1_700_000_000.25, 1_700_000_000.25))
        os.symlink("/etc/passwd", os.path.join(folder, "link"))
        self.assertIn("kept", workdir.save_snapshot(folder, build_dir))
        self.assertTrue(workdir.restore_snapshot(build_dir, back))
        self.assertEqual(sorted(os.listdir(back)), ["cuda_extensions"])
        self.assertEqual(os.stat(os.path.join(back, "cuda_extensions", "main.o")).st_mtime, 1_700_000_000.25)
        shutil.rmtree(folder)
        os.mkdir(folder)
        self.assertEqual(workdir.save_snapshot(folder, build_dir), "")  # an empty folder keeps nothing
        self.assertFalse(os.path.exists(os.path.join(build_dir, workdir.WORKDIR_SNAPSHOT)))

    def test_relative_paths_given_to_the_command_are_from_where_it_started(self):
        os.mkdir(os.path.join(self.start, "c"))
        write(os.path.join(self.start, "c"), "ok.py", LOOKS)
        rec = self.harness(
            *("verify", "--device", "cpu", "--seed", "7", "--task", os.path.relpath(SMALL_SOFTMAX, self.start)),
            *("--candidate", "c/ok.py"),
            out=os.path.join("c", "record.json"),
        )
        self.assertTrue(rec["ok"], rec)


class TwoCandidatesInARowTest(unittest.TestCase):
    """One worker serves both: the second finds an empty folder, not the first's files."""

    def test_the_next_candidate_sees_nothing_of_the_last(self):
        tmp = tempfile.mkdtemp()
        server = Server()
        try:
            first = write(tmp, "writes.py", WRITES)
            second = write(tmp, "looks.py", LOOKS)
            _, a = server.evaluate(first)
            answer_b, b = server.evaluate(second)
            self.assertTrue(a["verify"]["ok"], a["verify"])
            self.assertTrue(b["verify"]["ok"], b["verify"])
            self.assertTrue(answer_b["reused"], answer_b)  # the same process ran both
            self.assertFalse(os.path.exists(os.path.join(HARNESS, "left-by-a.txt")))
            self.assertFalse(os.path.exists(os.path.join(HARNESS, "build")))
        finally:
            server.close()
            shutil.rmtree(tmp, ignore_errors=True)


class AbsolutePathsTest(unittest.TestCase):
    def test_path_options_become_absolute_and_a_backward_task_keeps_its_suffix(self):
        request = VerifyRequest(task="k/t#backward", candidate="c.py", seed=3)
        got = workdir.absolute(request)
        self.assertEqual(got.task, os.path.abspath("k/t") + "#backward")
        self.assertEqual(got.candidate, os.path.abspath("c.py"))
        self.assertIsNone(got.out)
        self.assertEqual(got.seed, 3)
        self.assertEqual(request.task, "k/t#backward")  # the caller's request is left as it was

    def test_the_cwd_comes_back_and_the_folder_goes(self):
        before = os.getcwd()
        with workdir.private(DeviceRequest()) as _:
            inside = os.getcwd()
            with open("scratch", "w") as f:
                f.write("x")
        self.assertEqual(os.getcwd(), before)
        self.assertNotEqual(inside, before)
        self.assertFalse(os.path.exists(inside))


if __name__ == "__main__":
    unittest.main()
