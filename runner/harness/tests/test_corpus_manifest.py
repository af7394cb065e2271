"""runner/corpus/manifest.json is consistent with the files it lists and with docs/DESIGN.md.

No harness and no torch needed: this reads files only. The GPU corpus itself runs on a GPU
machine (runner/corpus/README.md); here we check that every hack class has a candidate,
every entry names a file and a task that exist, its format is what the harness will detect
from the content, its reasons are codes the design defines, and every corpus file says in
its header which class it is and what should catch it.
"""

import json
import os
import re
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
CORPUS = os.path.join(REPO, "runner", "corpus")
MANIFEST = os.path.join(CORPUS, "manifest.json")
DESIGN = os.path.join(REPO, "docs", "DESIGN.md")

KEYS = {"file", "task", "format", "hack", "expect", "reasons", "check"}
TASK_LEVEL = {8, 14}  # classes that live in the task, not in a kernel
TIMING_ONLY = {14, 16}


def design_reasons():
    """The reason codes of DESIGN.md's verdict table (`code` in the first column)."""
    with open(DESIGN) as f:
        text = f.read()
    section = text.split("## Verdict reasons", 1)[1].split("\n## ", 1)[0]
    codes = set()
    for line in section.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            codes.update(re.findall(r"`([a-z0-9-]+)`", line.split("|")[1]))
    return codes


def detect_format(path, source):
    """The content rules of DESIGN.md ("The format is detected from content")."""
    if path.endswith(".py"):
        return "py"
    if re.search(r"\bevk_(forward|backward)\s*\(", source):
        return "evk"
    if "PYBIND11_MODULE" in source:
        return "torch-ext"
    return None


SHARED = os.environ.get("EVOKERNEL_SHARED_DATA") or os.path.join(os.path.dirname(REPO), "shared", "data")


def task_path(task):
    """A manifest task path on disk: `shared:REST` is public task data under
    $EVOKERNEL_SHARED_DATA (run_manifest.py's rule), never copied into the repository."""
    if task.startswith("shared:"):
        return os.path.join(SHARED, task[len("shared:") :])
    return os.path.join(REPO, task)


def is_task(path):
    if os.path.isdir(path):
        return os.path.exists(os.path.join(path, "task.json")) or os.path.exists(os.path.join(path, "func_forward.py"))
    return path.endswith(".py") and os.path.isfile(path)


class CorpusManifestTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(MANIFEST) as f:
            cls.entries = json.load(f)
        cls.reasons = design_reasons()

    def test_entries_have_the_contract_fields(self):
        """Every entry has exactly the fields the TypeScript runner parses, with valid values."""
        self.assertIsInstance(self.entries, list)
        for e in self.entries:
            with self.subTest(entry=e.get("file")):
                self.assertEqual(set(e) - {"launchBound", "timeoutS"}, KEYS)  # optional: class 14; a load-time compile
                self.assertIn(e["format"], ("evk", "torch-ext", "py"))
                self.assertIn(e["expect"], ("pass", "reject"))
                self.assertIn(e["check"], ("verify", "bench"))
                self.assertTrue(e["hack"] is None or (isinstance(e["hack"], int) and 1 <= e["hack"] <= 16))
                if e["expect"] == "pass":
                    self.assertEqual(e["reasons"], [])
                    # a correct kernel, or class 14: timed and marked launch-bound, never rejected
                    self.assertTrue(e["hack"] is None or e.get("launchBound") is True, e)
                else:
                    self.assertTrue(e["reasons"], "a rejected candidate must list the reasons that count")
                    self.assertIsNotNone(e["hack"])

    def test_reasons_are_design_codes(self):
        """Every accepted reason is a verdict code of docs/DESIGN.md."""
        self.assertIn("output-memory-reuse", self.reasons)  # the table was read
        for e in self.entries:
            for r in e["reasons"]:
                self.assertIn(r, self.reasons, f"{e['file']}: {r!r} is not a reason code of DESIGN.md")

    def test_files_and_tasks_exist(self):
        """Every file exists, and every task is a folder with task.json (or a task file)."""
        missing = []
        for e in self.entries:
            if not os.path.isfile(os.path.join(REPO, e["file"])):
                missing.append(e["file"])
            if e["task"].startswith("shared:") and not os.path.isdir(SHARED):
                continue  # public data absent here: the GPU run has it
            if not is_task(task_path(e["task"])):
                missing.append(f"{e['task']} (task of {e['file']})")
        self.assertEqual(missing, [], "paths in manifest.json that do not exist")

    def test_format_matches_content(self):
        """The declared format is the one the harness detects from the file's content."""
        for e in self.entries:
            with open(os.path.join(REPO, e["file"])) as f:
                source = f.read()
            self.assertEqual(detect_format(e["file"], source), e["format"], e["file"])

    def test_every_hack_class_is_covered(self):
        """Classes 1-16 each have an entry that catches them: rejected, except class 14 (a task
        too small to time), which is timed and must come back marked launch-bound on every
        configuration; task-level ones point at a corpus task."""
        by_class = {}
        for e in self.entries:
            if e["expect"] == "reject" or e.get("launchBound"):
                by_class.setdefault(e["hack"], []).append(e)
        self.assertEqual(sorted(by_class), list(range(1, 17)))
        for hack in TASK_LEVEL:
            for e in by_class[hack]:
                self.assertTrue(e["task"].startswith("runner/corpus/tasks/"), e)
        self.assertEqual(by_class[8][0]["reasons"], ["degenerate-task"])
        self.assertEqual((by_class[14][0]["expect"], by_class[14][0]["launchBound"]), ("pass", True))

    def test_timing_only_classes_are_checked_by_bench(self):
        """Hack 14 and 16 are caught only when timing: their entries say check = bench."""
        for e in self.entries:
            if e["hack"] in TIMING_ONLY:
                self.assertEqual(e["check"], "bench", e["file"])
            else:
                self.assertEqual(e["check"], "verify", e["file"])

    def test_there_are_correct_candidates_in_every_format(self):
        """Correct candidates exist in each format, so a verifier that rejects everything fails."""
        formats = {e["format"] for e in self.entries if e["expect"] == "pass"}
        self.assertEqual(formats, {"evk", "torch-ext", "py"})

    def test_headers_name_the_class(self):
        """Each corpus kernel starts with a comment naming its hack class (or saying it is correct)."""
        for e in self.entries:
            path = os.path.join(REPO, e["file"])
            with open(path) as f:
                head = f.read(1500)
            with self.subTest(file=e["file"]):
                if e["expect"] == "pass" and e["hack"] in TASK_LEVEL:
                    self.assertRegex(head, rf"hack class {e['hack']}\b")  # timed and marked, not rejected
                elif e["expect"] == "pass":
                    self.assertRegex(head, r"Correct \(expect pass\)")
                elif e["hack"] in TASK_LEVEL:
                    self.assertRegex(head, rf"hack class {e['hack']}\b")
                else:
                    self.assertRegex(head, rf"Hack class {e['hack']}\b")
                    self.assertIn("should catch it", head)

    def test_every_corpus_candidate_is_listed(self):
        """No adversarial file in runner/corpus/<task>/ is left out of the manifest."""
        listed = {e["file"] for e in self.entries}
        unlisted = []
        for root, _, files in os.walk(CORPUS):
            rel_root = os.path.relpath(root, REPO)
            top = os.path.relpath(root, CORPUS).split(os.sep)[0]
            if top in ("tasks", "isolation", "correct", "."):
                # task folders are listed by their baseline; isolation and the correct corpus have their own manifests
                continue
            for name in files:
                if name.endswith((".cu", ".py")):
                    rel = os.path.join(rel_root, name)
                    if rel not in listed:
                        unlisted.append(rel)
        self.assertEqual(unlisted, [])


if __name__ == "__main__":
    unittest.main()
