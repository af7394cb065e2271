"""commands.run: a command's own failure is exit 4 with its traceback; GPU memory that ran out
outside a candidate's call (on the H100, 2026-11-26, the reference's while another job held
56 GiB) is said in a plain line after it."""

import contextlib
import io
import os
import unittest
from unittest import mock

import torch

from evokernel_harness import commands
from evokernel_harness.command_request import DeviceRequest

OutOfMemoryError = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError


def run_raising(err: Exception) -> tuple[int, str]:
    def command(_args):
        raise err

    stderr = io.StringIO()
    with (
        mock.patch.dict(commands.COMMANDS, {"device": command}),
        mock.patch.dict(os.environ, {"EVOKERNEL_GPU_LOCKS": "off"}),
        contextlib.redirect_stderr(stderr),
    ):
        code = commands.run(DeviceRequest())
    return code, stderr.getvalue()


class CommandFailureTest(unittest.TestCase):
    def test_out_of_memory_outside_a_candidate_is_said_plainly(self):
        code, stderr = run_raising(OutOfMemoryError("CUDA out of memory. Tried to allocate 4.00 GiB."))
        self.assertEqual(code, 4)
        self.assertIn("Tried to allocate 4.00 GiB", stderr)  # torch's own message, traceback kept
        self.assertIn("ran out of GPU memory outside the candidate's calls", stderr)
        self.assertIn("one GPU job at a time", stderr)

    def test_other_failures_keep_their_traceback_alone(self):
        code, stderr = run_raising(ValueError("a bug"))
        self.assertEqual(code, 4)
        self.assertIn("ValueError: a bug", stderr)
        self.assertNotIn("GPU memory", stderr)


if __name__ == "__main__":
    unittest.main()
