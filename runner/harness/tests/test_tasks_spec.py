"""A native task's task.json is read once per run (issue 21): the runner reads and checks it,
and each request carries it (`taskSpec`), so the harness's commands take it instead of reading
the file again. What the harness checks of a task.json it checks of a given one as well.

Run:  cd runner/harness && PYTHONPATH=. /usr/bin/python3 -m unittest tests.test_tasks_spec -v
"""

import builtins
import json
import os
import shutil
import tempfile
import unittest
from typing import Any

from evokernel_harness.command_request import parse_command
from evokernel_harness.commands.inspect import cmd_inspect
from evokernel_harness.tasks import TaskError, load_task, task_from

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
SMALL_SOFTMAX = os.path.join(REPO, "test", "fixtures", "tasks", "small_softmax")


class TaskSpecTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="evk-spec-")
        self.task = os.path.join(self.dir, "small_softmax")
        shutil.copytree(SMALL_SOFTMAX, self.task)
        with open(os.path.join(self.task, "task.json")) as f:
            self.spec: dict[str, Any] = json.load(f)
        # what is on disk now is not a task at all: only the given spec can make one
        with open(os.path.join(self.task, "task.json"), "w") as f:
            f.write("{ not json")

    def tearDown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_a_given_spec_is_the_task_and_the_file_is_not_opened(self) -> None:
        opened: list[str] = []
        real_open = builtins.open

        def watching_open(file: Any, *args: Any, **kwargs: Any) -> Any:
            opened.append(str(file))
            return real_open(file, *args, **kwargs)

        spec = {**self.spec, "configs": self.spec["configs"][:1]}
        builtins.open = watching_open
        try:
            task = load_task(self.task, spec)
        finally:
            builtins.open = real_open
        self.assertEqual([c.name for c in task.configs if not c.heldout], [spec["configs"][0]["name"]])
        self.assertFalse([f for f in opened if f.endswith("task.json")], opened)

    def test_without_a_spec_the_file_is_read_and_its_faults_named(self) -> None:
        with self.assertRaisesRegex(TaskError, "task.json: not valid JSON"):
            load_task(self.task)

    def test_a_request_carries_it_to_the_command(self) -> None:
        args = parse_command({"command": "inspect", "task": self.task, "taskSpec": self.spec})
        record = cmd_inspect(args)
        self.assertTrue(record["ok"], record.get("error"))
        given = self.spec["configs"] + self.spec.get("heldout", [])
        self.assertEqual([c["name"] for c in record["configs"]], [c["name"] for c in given])

    def test_a_given_spec_is_held_to_the_same_rules(self) -> None:
        broken = {k: v for k, v in self.spec.items() if k != "inputs"}
        with self.assertRaisesRegex(TaskError, "missing required field 'inputs'"):
            load_task(self.task, broken)
        args = parse_command({"command": "inspect", "task": self.task, "taskSpec": broken})
        record = cmd_inspect(args)
        self.assertFalse(record["ok"])
        self.assertIn("missing required field 'inputs'", record["error"])

    def test_a_spec_that_is_not_an_object_is_refused(self) -> None:
        # the command line's text: not a task.json
        with self.assertRaisesRegex(TaskError, "--task-spec is a JSON object"):
            task_from(self.task, "[1, 2]")
        with self.assertRaisesRegex(TaskError, "--task-spec is not valid JSON"):
            task_from(self.task, "{ nope")


if __name__ == "__main__":
    unittest.main()
