"""The static check runs once per candidate: the runner's cascade asks `static`, then gives its
record to `verify` or `evaluate` (--static, the request's `static`), which carry its findings
into their records instead of checking the source again. Without --static (a person's command
line) they check it themselves, as before. On the CPU, in this process, the check counted."""

import json
import os
import tempfile
import unittest
from unittest import mock

from evokernel_harness import commands, static_check
from evokernel_harness.command_request import parse_command

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
SMALL_SOFTMAX = os.path.join(REPO, "test", "fixtures", "tasks", "small_softmax")
PASSING = os.path.join(SMALL_SOFTMAX, "candidate_ok.py")
SEED = 7


def counted():
    """static_check.check, counted: (patch, the list its calls are appended to)."""
    calls = []
    real = static_check.check

    def check(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    return mock.patch.object(static_check, "check", check), calls


def run(request, tmp, name):
    """A typed request run as the fork server's children run it; its record."""
    out = os.path.join(tmp, f"{name}.json")
    args = parse_command({**request, "out": out})
    with mock.patch.dict(os.environ, {"EVOKERNEL_GPU_LOCKS": "off"}):
        code = commands.run(args)
    if code != 0:
        raise AssertionError(f"{request['command']}: exit {code}")
    with open(out) as f:
        return json.load(f)


def evaluate(tmp, **fields):
    outs = {stage: os.path.join(tmp, f"{stage}.json") for stage in ("quick", "verify", "bench")}
    request = {
        "command": "evaluate",
        "task": SMALL_SOFTMAX,
        "candidate": PASSING,
        "device": "cpu",
        "seed": SEED,
        **fields,
        **{f"{stage}Out": path for stage, path in outs.items()},
    }
    with mock.patch.dict(os.environ, {"EVOKERNEL_GPU_LOCKS": "off"}):
        code = commands.run(parse_command(request))
    if code != 0:
        raise AssertionError(f"evaluate: exit {code}")
    records = {}
    for stage, path in outs.items():
        if os.path.exists(path):  # none after the first record that is not ok
            with open(path) as f:
                records[stage] = json.load(f)
    return records


def without_timing(record):
    return {k: v for k, v in record.items() if k not in ("seconds", "phases")}


class StaticCheckOnceTest(unittest.TestCase):
    def static(self, tmp):
        return run({"command": "static", "candidate": PASSING, "task": SMALL_SOFTMAX, "relaxed": True}, tmp, "static")

    def test_the_runners_evaluate_checks_the_source_once(self):
        patch, calls = counted()
        with tempfile.TemporaryDirectory() as tmp, patch:
            record = self.static(tmp)
            records = evaluate(tmp, static=record)
        self.assertTrue(record["ok"])
        self.assertTrue(records["verify"]["ok"])
        self.assertEqual(calls, [PASSING])

    def test_the_runners_verify_checks_the_source_once(self):
        patch, calls = counted()
        with tempfile.TemporaryDirectory() as tmp, patch:
            record = self.static(tmp)
            verified = run(
                {"command": "verify", "task": SMALL_SOFTMAX, "candidate": PASSING, "device": "cpu", "static": record},
                tmp,
                "verify",
            )
        self.assertTrue(verified["ok"])
        self.assertEqual(calls, [PASSING])

    def test_the_records_are_those_of_a_harness_that_checks_again(self):
        patch, calls = counted()
        with tempfile.TemporaryDirectory() as tmp, patch:
            given = evaluate(tmp, static=self.static(tmp))
            checked = evaluate(tmp)
        self.assertEqual(len(calls), 2)  # `static`, then the second evaluate's own check
        for stage in ("quick", "verify", "bench"):
            self.assertEqual(without_timing(given[stage]), without_timing(checked[stage]), stage)

    def test_the_given_findings_are_the_ones_carried(self):
        with tempfile.TemporaryDirectory() as tmp:
            record = self.static(tmp)
            warning = {
                "code": "noted",
                "hack": None,
                "line": 3,
                "text": "x",
                "message": "a finding only the given record has",
                "severity": "warn",
            }
            records = evaluate(tmp, static={**record, "findings": [*record["findings"], warning]})
        self.assertIn("static check, line 3: a finding only the given record has", records["verify"]["warnings"])
        static = records["verify"]["checks"][0]
        self.assertEqual(static["name"], "static")
        self.assertEqual(static["detail"], f"{len(record['findings']) + 1} findings")

    def test_a_rejecting_record_given_is_a_rejection(self):
        rejected = {
            "schema": 1,
            "kind": "static",
            "ok": False,
            "format": "py",
            "findings": [
                {"code": "cheat", "hack": 3, "line": 5, "text": "t", "message": "m", "severity": "reject"},
            ],
        }
        with tempfile.TemporaryDirectory() as tmp:
            records = evaluate(tmp, static=rejected)
        quick = records["quick"]
        self.assertEqual(
            (quick["ok"], quick["status"], quick["reason"], quick["hack"]), (False, "rejected", "cheat", 3)
        )
        self.assertEqual(quick["static"], rejected)
        self.assertNotIn("verify", records)

    def test_what_is_not_this_candidates_static_record_is_refused(self):
        record = {"schema": 1, "kind": "static", "ok": True, "format": "py", "findings": []}
        finding = {"code": "c", "hack": None, "line": 1, "text": "t", "message": "m", "severity": "reject"}
        for bad in (
            {**record, "kind": "static-context"},
            {**record, "format": "evk"},  # the candidate is a py one
            {**record, "findings": [finding]},  # ok with a rejecting finding
            {**record, "ok": False},  # not ok without one
            {**record, "findings": [{"code": "c"}]},
            {**record, "ok": "yes"},
        ):
            with self.subTest(record=bad), tempfile.TemporaryDirectory() as tmp:
                with self.assertRaises(SystemExit):
                    evaluate(tmp, static=bad)


if __name__ == "__main__":
    unittest.main()
