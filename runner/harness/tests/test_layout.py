"""The harness's tests are named after the module they test, so a reader finds a module's
tests without searching: tests/test_<module path, `_` for `/`>[_<what it checks>].py
(test_commands_stages_static_once.py tests commands/stages.py, test_tasks_spec.py tasks/).
A few test something that is not a harness module; they are listed here with what they test.

Run:  cd runner/harness && /usr/bin/python3 -m unittest tests.test_layout -v
"""

import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(os.path.dirname(HERE), "evokernel_harness")

# Tests of what is not a harness module: name → what they test.
NOT_A_MODULE = {
    "corpus_manifest": "runner/corpus/manifest.json",
    "template_sweep": "lab/template-sweep.py",
    "layout": "this folder's names",
}


def module_names() -> set[str]:
    """Every module, package and data folder of the harness, as a test's name spells it
    (commands/stages.py → commands_stages, tasks/__init__.py → tasks, contract/ → contract)."""
    names = set()
    for folder, dirs, files in os.walk(PACKAGE):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        where = os.path.relpath(folder, PACKAGE)
        parts = [] if where == "." else where.split(os.sep)
        if parts:
            names.add("_".join(parts))
        for name in files:
            if name.endswith(".py") and name != "__init__.py":
                names.add("_".join([*parts, name[: -len(".py")]]))
    return names


class LayoutTest(unittest.TestCase):
    def test_each_test_is_named_after_the_module_it_tests(self):
        modules = module_names()
        for name in sorted(os.listdir(HERE)):
            if not (name.startswith("test_") and name.endswith(".py")):
                continue
            subject = name[len("test_") : -len(".py")]
            with self.subTest(test=name):
                named = subject in NOT_A_MODULE or any(
                    subject == module or subject.startswith(module + "_") for module in modules
                )
                self.assertTrue(
                    named,
                    f"{name} is not named after a harness module: name it test_<module path>[_<what>].py "
                    "(a module of evokernel_harness, `_` for `/`), or list what it tests in NOT_A_MODULE",
                )

    def test_the_exceptions_are_not_modules(self):
        self.assertFalse(set(NOT_A_MODULE) & module_names())


if __name__ == "__main__":
    unittest.main()
