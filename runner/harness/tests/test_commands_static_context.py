"""`static --reference-ops … --libraries …` (with what `static-context` says of the task) gives
the same record as `static --task`, for every candidate of the adversarial corpus (all three
candidate formats, native tasks) and the public formats' fixtures, without importing torch."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from evokernel_harness.command_request import StaticContextRequest, StaticRequest
from evokernel_harness.commands.static import cmd_static, cmd_static_context

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def static_args(candidate, task=None, reference_ops=None, libraries="allow", relaxed=False):
    return StaticRequest(
        candidate=candidate, task=task, reference_ops=reference_ops, libraries=libraries, relaxed=relaxed
    )


def task_path(task):
    if task.startswith("shared:"):  # public task data, as run_manifest.py resolves it
        data = os.environ.get("EVOKERNEL_SHARED_DATA", os.path.join(REPO, "..", "shared", "data"))
        return os.path.join(data, task[len("shared:") :])
    return os.path.join(REPO, task)


def pairs():
    """The adversarial and the correct corpus (robust-kbench and KernelBench tasks among them,
    where ../shared/data is present)."""
    seen = set()
    for manifest in ("manifest.json", os.path.join("correct", "manifest.json")):
        with open(os.path.join(REPO, "runner", "corpus", manifest)) as f:
            for entry in json.load(f):
                key = (entry["file"], entry["task"])
                if key not in seen:
                    seen.add(key)
                    yield os.path.join(REPO, entry["file"]), task_path(entry["task"])
    fixtures = os.path.join(REPO, "test", "fixtures")
    yield (
        os.path.join(fixtures, "kernelbench_modelnew", "23_Softmax_new.py"),
        os.path.join(fixtures, "kernelbench", "23_Softmax.py"),
    )


class StaticContextTest(unittest.TestCase):
    def test_the_context_gives_the_same_findings_as_the_task(self):
        checked = 0
        for candidate, task in pairs():
            if not (os.path.exists(candidate) and os.path.exists(task.split("#")[0])):
                continue
            with self.subTest(candidate=os.path.relpath(candidate, REPO)):
                context = cmd_static_context(StaticContextRequest(task=task))
                self.assertEqual(context["kind"], "static-context")
                for relaxed in (False, True):
                    by_task = cmd_static(static_args(candidate, task=task, relaxed=relaxed))
                    by_context = cmd_static(
                        static_args(
                            candidate,
                            reference_ops=json.dumps(context["referenceOps"]),
                            libraries=context["libraries"],
                            relaxed=relaxed,
                        )
                    )
                    self.assertEqual(by_context, by_task)
                checked += 1
        self.assertGreater(checked, 20)

    def test_the_static_check_with_a_context_imports_no_torch(self):
        env = {**os.environ, "PYTHONPATH": os.path.join(REPO, "runner", "harness")}
        # a file of its own, never /dev/null: a test that wrote there broke every other test
        # on the machine the day the harness renamed its record over it
        out_file = os.path.join(tempfile.mkdtemp(), "static.json")
        self.addCleanup(shutil.rmtree, os.path.dirname(out_file), True)
        code = (
            "import sys, json; from evokernel_harness.cli import main; "
            "rc = main(['static', '--candidate', sys.argv[1], '--reference-ops', '[\"softmax\"]', '--out', "
            "sys.argv[2]]); "
            "print(json.dumps({'rc': rc, 'torch': 'torch' in sys.modules}))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code, os.path.join(REPO, "kernels", "softmax", "kernel.cu"), out_file],
            capture_output=True,
            text=True,
            env=env,
            timeout=1800,
        )
        self.assertEqual(out.returncode, 0, out.stderr[-2000:])
        self.assertEqual(json.loads(out.stdout.strip().splitlines()[-1]), {"rc": 0, "torch": False})

    def test_reference_ops_must_be_a_json_list_of_names(self):
        for bad in ("softmax", "{}", "[1]", "not json"):
            with self.subTest(bad=bad), self.assertRaises(SystemExit):
                cmd_static(static_args(os.path.join(REPO, "kernels", "softmax", "kernel.cu"), reference_ops=bad))


if __name__ == "__main__":
    unittest.main()
