"""No static rule refuses on an attribute's name alone (issue 33, point 3).

Replacing an attribute of torch, time, numpy, triton, timeit, builtins or the harness
refuses on sight (timer-patching), under whatever name the source reaches it by; an
attribute of the candidate's own objects (`self.*`, its classes and functions, objects its
code created) never does, whatever its name (`self.norm`, `self.max_len`,
`self.time_embed`, `self.record`); a timer's or check's name on an object the source does
not tell is a warning, and the harness's run-time check of its timers decides.
"""

import os
import textwrap
import unittest

from evokernel_harness import static_check

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
BLOCK = os.path.join(REPO, "runner", "corpus", "correct", "layernorm", "24_py_inline_transformer_block_attributes.py")


def patching(source):
    """(severity, line) of each timer-patching finding of a Python source."""
    findings = static_check.check("c.py", textwrap.dedent(source), "py", frozenset({"layer_norm"}), strict=True)
    return [(f["severity"], f["line"]) for f in findings["findings"] if f["code"] == "timer-patching"]


class OwnAttributesTest(unittest.TestCase):
    def test_a_transformer_block_setting_norm_max_len_time_embed_record_is_not_refused(self):
        src = """
            import torch
            import torch.nn as nn

            class Block(nn.Module):
                def __init__(self, d, max_len=2048):
                    super().__init__()
                    self.norm = nn.LayerNorm(d)
                    self.max_len = max_len
                    self.time_embed = nn.Linear(d, d)
                    self.record = []
                    self.max = self.abs = self.time = self.wait = self.sub = self.equal = None
                    self.Event = self.Timer = self.elapsed_time = self.synchronize = None

                def forward(this, x):
                    this.record.append(x.shape)
                    this.norm.eps = 1e-5
                    return this.norm(x)

            class Cache:
                pass

            Cache.max = 4
            cache = Cache()
            cache.record = {}
            block = Block(64)
            block.norm = nn.Identity()
            def helper():
                pass
            helper.time = 0.0
            import sys, io
            sys.stdout = io.StringIO()
        """
        self.assertEqual(patching(src), [])

    def test_the_correct_corpus_transformer_block_has_no_timer_patching_finding(self):
        with open(BLOCK) as f:
            rec = static_check.check(BLOCK, f.read(), "py", frozenset({"layer_norm"}), strict=True)
        self.assertTrue(rec["ok"], rec["findings"])
        self.assertEqual([f for f in rec["findings"] if f["code"] == "timer-patching"], [])

    def test_torch_compile_settings_are_global_state_not_patching(self):
        src = "import torch\ntorch._inductor.config.coordinate_descent_tuning = True\n"
        rec = static_check.check("c.py", src, "py", frozenset(), strict=True)
        self.assertTrue(rec["ok"], rec["findings"])
        self.assertEqual([f["code"] for f in rec["findings"]], ["global-state"])


class LibraryAttributesTest(unittest.TestCase):
    def assert_refused(self, src, line):
        self.assertIn(("reject", line), patching(src), src)

    def test_replacing_a_library_or_harness_attribute_refuses_under_any_name(self):
        cases = {
            "import torch\ntorch.cuda.Event.elapsed_time = lambda a, b: 0.001\n": 2,
            "import torch as T\nEv = T.cuda.Event\nEv.elapsed_time = None\n": 3,
            "from torch.cuda import Event\nEvent.record = lambda *a: None\n": 2,
            "import torch\nc = torch.cuda\nev = getattr(c, 'Event')\nev.query = None\n": 4,
            "import time\ntime.perf_counter = lambda: 0.0\n": 2,
            "t = __import__('time')\nt.perf_counter = lambda: 0.0\n": 2,
            "import builtins\nbuiltins.max = min\n": 2,
            "__builtins__.abs = abs\n": 1,
            "import numpy as np\nnp.allclose = lambda *a, **k: True\n": 2,
            "import triton.testing\ntriton.testing.do_bench = None\n": 2,
            "import evokernel_harness.guards as g\ng.sub = None\n": 2,
            "import torch\ntype(torch.cuda.Event()).elapsed_time = None\n": 2,
            "import torch\ne = torch.cuda.Event()\ne.__class__.elapsed_time = None\n": 3,
            "import torch\ntorch.cuda.synchronize: object = lambda: None\n": 2,
            "import time\ndel time.perf_counter\n": 2,
            "import torch\ntorch.allclose = lambda *a, **k: True\n": 2,
        }
        for src, line in cases.items():
            with self.subTest(src=src):
                self.assert_refused(src, line)

    def test_a_timer_name_on_an_object_the_source_does_not_tell_is_a_warning(self):
        """A parameter, or what a library call returned: the run-time check decides."""
        self.assertEqual(patching("def f(ev):\n    ev.elapsed_time = None\n"), [("warn", 2)])
        self.assertEqual(patching("import torch\nx = torch.zeros(3)\nx.max = 1\n"), [("warn", 3)])


if __name__ == "__main__":
    unittest.main()
