"""The verdict decided where the candidate never ran (issue 16.1, judge.py), on the CPU with
the real harness command line: candidates that take over their own process (replace the
harness's compare function, write a passing record themselves and exit, bend the files that
carry their outputs, leave a process behind to rewrite the record) are refused with the true
reason; an honest candidate's record is unchanged. The hostile candidates live in
test/security/fixtures/verdict/ (the TypeScript security test runs them through the runner).

Run:  cd runner/harness && PYTHONPATH=. /usr/bin/python3 -m unittest tests.test_judge -v
"""

import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

import torch

from evokernel_harness import judge, outputs

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
HARNESS = os.path.join(REPO, "runner", "harness")
SMALL_SOFTMAX = os.path.join(REPO, "test", "fixtures", "tasks", "small_softmax")
PASSING = os.path.join(SMALL_SOFTMAX, "candidate_ok.py")
HOSTILE = os.path.join(REPO, "test", "security", "fixtures", "verdict")
SEED = "7"


def verify(candidate, *extra):
    """The record `verify` left in --out once the command ended (and a moment after: a stray
    process would have rewritten it by then), the command's exit code and its stderr."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "verify.json")
        env = {**os.environ, "PYTHONPATH": HARNESS, "EVOKERNEL_GPU_LOCKS": "off"}
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "evokernel_harness",
                "verify",
                "--device",
                "cpu",
                "--seed",
                SEED,
                "--task",
                SMALL_SOFTMAX,
                "--candidate",
                candidate,
                *extra,
                "--out",
                out,
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        time.sleep(0.3)
        try:
            with open(out) as f:
                record = json.load(f)
        except (OSError, ValueError):
            record = None
        return record, proc.returncode, proc.stderr


RUNS = {
    name: (os.path.join(HOSTILE, f"{name}.py"),)
    for name in (
        "patch_compare",
        "forged_record",
        "output_symlink",
        "output_absurd_size",
        "output_wrong_dtype",
        "stray_rewriter",
        "segfault_on_odd_rows",
        "segfault_at_once",
    )
}
RUNS["honest"] = (PASSING,)
RUNS["honest-quick"] = (PASSING, "--quick")
_pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2)))
_futures = {name: _pool.submit(verify, *args) for name, args in RUNS.items()}


def result(name):
    return _futures[name].result()


class HostileCandidatesTest(unittest.TestCase):
    def refused(self, name, reason, *words):
        record, code, stderr = result(name)
        self.assertEqual(code, 0, stderr[-3000:])
        self.assertIsNotNone(record, stderr[-3000:])
        self.assertFalse(record["ok"], record["message"])
        self.assertEqual(record["status"], "rejected")
        self.assertEqual(record["reason"], reason, record["message"])
        for word in words:
            self.assertIn(word, record["message"])
        return record

    def test_a_candidate_that_replaces_the_compare_function_is_refused_by_the_judge(self):
        record = self.refused("patch_compare", "verdict-forged", "never loaded the candidate", "configuration 64x1000")
        self.assertEqual(record["hack"], 6)
        self.assertEqual(record["mismatch"]["nonFinite"], 0)

    def test_a_passing_record_written_by_the_candidate_itself_never_counts(self):
        record = self.refused("forged_record", "outputs-missing", "wrote no file")
        self.assertNotEqual(record["message"], "passed 7 trials on 2 configurations")

    def test_an_output_file_that_is_a_symlink_is_refused(self):
        self.refused("output_symlink", "outputs-invalid", "symlink")

    def test_an_output_file_of_absurd_size_is_refused_before_it_is_read(self):
        self.refused("output_absurd_size", "outputs-invalid", f"holds {1 << 32} bytes", "expected 256000 bytes")

    def test_outputs_written_in_another_dtype_are_refused(self):
        self.refused("output_wrong_dtype", "outputs-invalid", "written as float64", "float32")

    def test_a_process_left_behind_cannot_rewrite_the_record_after_the_judge(self):
        record = self.refused("stray_rewriter", "mismatch")
        self.assertNotIn("FORGED", record["message"])


class SignalDeathTest(unittest.TestCase):
    def test_a_process_killed_after_a_shape_passed_is_shape_specific_naming_the_signal(self):
        record, code, stderr = result("segfault_on_odd_rows")
        self.assertEqual(code, 0, stderr[-3000:])
        self.assertIsNotNone(record, stderr[-3000:])
        self.assertEqual((record["ok"], record["status"], record["reason"]), (False, "rejected", "shape-specific"))
        self.assertIn("right on 64x1000", record["message"])
        self.assertIn("SIGSEGV", record["message"])

    def test_a_process_killed_before_any_shape_passed_ends_as_the_crash_it_is(self):
        record, code, stderr = result("segfault_at_once")
        self.assertEqual(code, -11, stderr[-3000:])
        self.assertIsNone(record)


class HonestCandidateTest(unittest.TestCase):
    def test_an_honest_candidate_passes_with_the_record_its_own_process_gives(self):
        record, code, stderr = result("honest")
        self.assertEqual(code, 0, stderr[-3000:])
        self.assertTrue(record["ok"], record["message"])
        self.assertEqual(record["message"], "passed 7 trials on 2 configurations")
        self.assertEqual([c["trials"] for c in record["configs"]], [4, 3])
        self.assertIn("pass confirmed", stderr)
        # what the judge costs on the CPU: writing the outputs in the candidate's process,
        # reading and comparing them in the judge's
        print(
            f"\n[verdict] small_softmax on the CPU: dump {record['phases'].get('dump', 0):.4f} s, "
            f"recheck {record['phases']['recheck']:.4f} s",
            file=sys.stderr,
        )

    def test_the_quick_check_is_judged_on_its_one_configuration(self):
        record, code, stderr = result("honest-quick")
        self.assertEqual(code, 0, stderr[-3000:])
        self.assertTrue(record["ok"], record["message"])
        self.assertEqual([c["name"] for c in record["configs"]], ["odd-33x257"])
        self.assertIn("recheck", record["phases"])


class OutputFilesTest(unittest.TestCase):
    """outputs.read against files a candidate's process may leave, one way of lying each."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.ref = [torch.randn(3, 5)]

    def header(self, text):
        with open(os.path.join(self.dir, "c0-0.json"), "w") as f:
            f.write(text)

    def data(self, size):
        with open(os.path.join(self.dir, "c0-0.0.bin"), "wb") as f:
            f.write(b"\0" * size)

    def refused(self, reason, word):
        with self.assertRaises(outputs.OutputError) as caught:
            outputs.read(self.dir, 0, 0, self.ref, "here")
        self.assertEqual(caught.exception.reason, reason)
        self.assertIn(word, caught.exception.message)

    def test_what_the_dump_writes_reads_back_bit_for_bit(self):
        ref = [
            torch.randn(3, 5),
            torch.randn(()).to(torch.bfloat16),
            torch.zeros(0, 4),
            torch.tensor([True, False]),
            torch.tensor([-3, 7], dtype=torch.int16),
            torch.randn(2, 3, dtype=torch.complex64),
            torch.randn(4, dtype=torch.float64),
        ]
        outputs.Dump(self.dir).write(0, 0, ref)
        got = outputs.read(self.dir, 0, 0, ref, "here")
        for g, r in zip(got, ref):
            self.assertEqual((g.dtype, g.shape), (r.dtype, r.shape))
            self.assertTrue(torch.equal(g, r))

    def test_a_header_that_is_not_json_or_too_large_or_lists_too_much(self):
        self.header("{not json")
        self.refused("outputs-invalid", "not JSON")
        self.header(" " * (outputs.HEADER_LIMIT + 1))
        self.refused("outputs-invalid", "expected at most")
        self.header(json.dumps({"outputs": [{"dtype": "float32", "shape": [3, 5]}] * 65}))
        self.refused("outputs-invalid", "lists no outputs")
        self.header(json.dumps({"outputs": []}))
        self.refused("outputs-invalid", "0 outputs written")

    def test_an_unknown_dtype_or_a_shape_that_is_not_the_references(self):
        self.header(json.dumps({"outputs": [{"dtype": "object", "shape": [3, 5]}]}))
        self.refused("outputs-invalid", "does not read")
        self.header(json.dumps({"outputs": [{"dtype": "float32", "shape": [5, 3]}]}))
        self.refused("outputs-invalid", "shape (5, 3)")
        self.header(json.dumps({"outputs": [{"dtype": "float32", "shape": [3, "5"]}]}))
        self.refused("outputs-invalid", "not a list of sizes")

    def test_a_data_file_of_the_wrong_size_or_missing_or_not_a_file(self):
        self.header(json.dumps({"outputs": [{"dtype": "float32", "shape": [3, 5]}]}))
        self.refused("outputs-missing", "wrote no file for output 0")
        self.data(59)
        self.refused("outputs-invalid", "holds 59 bytes, expected 60 bytes")
        os.unlink(os.path.join(self.dir, "c0-0.0.bin"))
        os.mkfifo(os.path.join(self.dir, "c0-0.0.bin"))  # a reader that opened it would wait forever
        self.refused("outputs-invalid", "not a regular file")

    def test_the_rule_of_what_is_kept_is_the_same_on_both_sides(self):
        keys = outputs.trial_keys(4)
        self.assertEqual(keys, [0, outputs.REFILL, 1, 2, 3])
        kept, dumped = 0, []
        for trial in keys:  # a budget of two and a half trials: the first, its refill, no more
            if outputs.required(trial, 100, kept, budget=250):
                kept += 100
                dumped.append(trial)
        self.assertEqual(dumped, [0, outputs.REFILL])


class ClaimTest(unittest.TestCase):
    def test_a_claim_is_read_only_from_a_small_regular_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            real = os.path.join(tmp, "real.json")
            with open(real, "w") as f:
                json.dump({"kind": "verify", "ok": True}, f)
            self.assertEqual(judge.read_claim(real)["ok"], True)
            link = os.path.join(tmp, "claim.json")
            os.symlink(real, link)
            self.assertIsNone(judge.read_claim(link))
            self.assertIsNone(judge.read_claim(os.path.join(tmp, "none.json")))

    def test_a_claim_that_is_not_a_pass_stays_a_failure_whatever_it_says(self):
        rec = judge.as_failure({"kind": "verify", "ok": False, "status": "passed", "reason": None})
        self.assertEqual((rec["ok"], rec["status"], rec["reason"]), (False, "rejected", "record-invalid"))


class DumpStagingTest(unittest.TestCase):
    """Outputs go to the judge's files in parts of PART bytes, written and read side by side,
    and between the GPU and a file through pinned buffers, a piece at a time (here parts of 16
    bytes and CPU buffers of 7 bytes stand in): what the judge reads back is each output's
    bytes exactly, for sizes below, at and across both; a part missing or of the wrong size is
    refused."""

    def staged(self):
        import contextlib
        from unittest import mock

        used = []

        @contextlib.contextmanager
        def take(stages, device):
            buffer = torch.zeros(7, dtype=torch.uint8)
            used.append(buffer)
            yield buffer

        return used, mock.patch.multiple(outputs, PART=16), mock.patch.object(outputs.Stages, "take", take)

    def test_parts_through_the_buffers_carry_the_same_bytes(self):
        outs = [torch.arange(100, dtype=torch.float32) * 0.5, torch.arange(7, dtype=torch.uint8), torch.ones(1)]
        used, part, take = self.staged()
        with tempfile.TemporaryDirectory() as plain, tempfile.TemporaryDirectory() as staged:
            outputs.Dump(plain).write(0, 0, outs)
            with part, take:
                outputs.Dump(staged).write(0, 0, outs)
                self.assertEqual(len(used), 25 + 1 + 1)  # one buffer a part: 400 bytes in 25 parts
                got = outputs.read(staged, 0, 0, outs, "here")
            for g, o in zip(got, outs):
                self.assertTrue(torch.equal(g, o))
            names = sorted(n for n in os.listdir(staged) if n.startswith("c0-0.0."))
            self.assertEqual(len(names), 25)
            with open(os.path.join(plain, "c0-0.0.bin"), "rb") as f:
                whole = f.read()
            pieces = b""
            for j in range(25):
                with open(os.path.join(staged, "c0-0.0.bin" if j == 0 else f"c0-0.0.{j}.bin"), "rb") as f:
                    pieces += f.read()
            self.assertEqual(whole, pieces)

    def test_a_part_missing_or_of_the_wrong_size_is_refused(self):
        outs = [torch.arange(10, dtype=torch.float32)]  # 40 bytes: parts of 16, 16 and 8
        _, part, take = self.staged()
        with tempfile.TemporaryDirectory() as folder, part, take:
            outputs.Dump(folder).write(0, 0, outs)
            last = os.path.join(folder, "c0-0.0.2.bin")
            with open(last, "ab") as f:
                f.write(b"x")
            with self.assertRaises(outputs.OutputError) as caught:
                outputs.read(folder, 0, 0, outs, "here")
            self.assertIn(
                "output 0 (part 3 of 3) of the candidate's outputs holds 9 bytes, expected 8", caught.exception.message
            )
            os.unlink(last)
            with self.assertRaises(outputs.OutputError) as caught:
                outputs.read(folder, 0, 0, outs, "here")
            self.assertEqual(caught.exception.reason, "outputs-missing")
            self.assertIn("no file for output 0 (part 3 of 3)", caught.exception.message)

    def test_no_buffer_on_the_cpu(self):
        with outputs.Stages().take(torch.device("cpu")) as stage:
            self.assertIsNone(stage)


class DumpRoomTest(unittest.TestCase):
    """A trial's outputs that do not fit where the judge reads them (the sandbox's /tmp, a
    tmpfs: KernelBench's 19_ReLU has 6 GiB outputs) end the harness with the sizes, not with a
    traceback of ENOSPC (on the H100, 2026-11-26: 'the harness failed (exit 4)' and a trace)."""

    def test_no_room_says_how_much_was_needed_and_what_to_do(self):
        import contextlib
        import errno
        import io
        from unittest import mock

        real_open = open

        def full(path, mode="r", *a, **k):
            if str(path).endswith(".bin") and "w" in mode:
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_open(path, mode, *a, **k)

        with tempfile.TemporaryDirectory() as folder:
            dump = outputs.Dump(folder)
            err = io.StringIO()
            with mock.patch("builtins.open", full), contextlib.redirect_stderr(err):
                with self.assertRaises(SystemExit) as ended:
                    dump.write(0, 0, [torch.zeros(1024, 1024)])
            self.assertEqual(ended.exception.code, 4)
            self.assertIn("one trial's outputs (0.0 GiB) does not fit in", err.getvalue())
            self.assertIn("GiB free", err.getvalue())
            self.assertEqual([n for n in os.listdir(folder) if n.endswith(".bin")], [])


if __name__ == "__main__":
    unittest.main()
