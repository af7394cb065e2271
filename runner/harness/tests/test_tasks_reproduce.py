"""A verdict's reproduction (issue 36.1): `--seed` with `--config` gives a configuration the
inputs it had in the run of every configuration. verify seeds a trial's inputs by the
configuration's name; its runs here go through the real command line on the CPU, as
test_verify_hacks's do. bench seeds them by the configuration's place among the visible ones,
which the selection keeps: test_bench holds that."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

from evokernel_harness.tasks import TaskError, load_task, select_configs

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
HARNESS = os.path.join(REPO, "runner", "harness")
SMALL_RELU = os.path.join(REPO, "test", "fixtures", "tasks", "small_relu")
COPY = os.path.join(SMALL_RELU, "candidate_copy.py")  # right on [0, 1) inputs only
SEED = "785164328"


def verify(*extra):
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "verify.json")
        argv = ["verify", "--task", SMALL_RELU, "--candidate", COPY, "--device", "cpu", "--seed", SEED]
        env = {**os.environ, "EVOKERNEL_GPU_LOCKS": "off"}
        subprocess.run(
            [sys.executable, "-m", "evokernel_harness", *argv, *extra, "--out", out],
            cwd=HARNESS,
            env=env,
            check=False,
            capture_output=True,
            timeout=240,
        )
        with open(out) as f:
            return json.load(f)


def entries(record):
    return {c["name"]: (c["ok"], c["reason"], c["trials"], c["maxAbs"], c["normRel"]) for c in record["configs"]}


class SelectConfigsTest(unittest.TestCase):
    def test_keeps_the_named_in_the_tasks_order_with_their_seed_slots(self):
        task = load_task(SMALL_RELU)
        select_configs(task, ["tall-17x3001", "odd-33x257"])
        self.assertEqual([c.name for c in task.configs], ["odd-33x257", "tall-17x3001"])
        self.assertEqual(task.configs[0].seed_slot, 1)  # second of the visible ones
        self.assertTrue(task.selected)

    def test_an_unknown_name_says_which_there_are(self):
        task = load_task(SMALL_RELU)
        with self.assertRaises(TaskError) as raised:
            select_configs(task, ["64x100"])
        self.assertIn("no configuration 64x100", str(raised.exception))
        self.assertIn("64x1000, odd-33x257, tall-17x3001", str(raised.exception))


class VerifyReproducesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.full = verify("--heldout")

    def test_the_named_configurations_get_the_verdict_and_inputs_of_the_full_run(self):
        self.assertEqual((self.full["status"], self.full["seed"]), ("rejected", int(SEED)))
        part = verify("--config", "64x1000", "--config", "odd-33x257")
        self.assertEqual((part["status"], part["reason"]), (self.full["status"], self.full["reason"]))
        self.assertEqual(part["mismatch"], self.full["mismatch"])
        full = entries(self.full)
        self.assertEqual(entries(part), {name: full[name] for name in ("64x1000", "odd-33x257")})

    def test_a_held_out_configuration_runs_when_named(self):
        part = verify("--config", "tall-17x3001")
        self.assertEqual(entries(part), {"tall-17x3001": entries(self.full)["tall-17x3001"]})


if __name__ == "__main__":
    unittest.main()
