// The config's globs in the dialect of GitHub's `paths:` filters (picomatch underneath):
// character classes, negations in order, dotfiles; what GitHub means differently (`?`,
// `+`) is refused by the config; the app's planner and the runner agree on every case.
import { describe, expect, it } from "vitest";
import { planTasks } from "../../src/app/planner.js";
import { selectChangedTasks } from "../../src/shared/changed-tasks.js";
import { parseConfig } from "../../src/shared/config.js";
import { globMatcher, pathFilter } from "../../src/shared/glob.js";

describe("globs as GitHub's paths filters read them", () => {
  it.each([
    ["kernels/[ab]*/kernel.cu", "kernels/attn/kernel.cu", true],
    ["kernels/[ab]*/kernel.cu", "kernels/softmax/kernel.cu", false],
    ["kernels/[a-c]x.cu", "kernels/bx.cu", true],
    ["**/*.cu", ".hidden/kernel.cu", true],
    ["*", "a/b", false],
    ["kernels/*.cu", "kernels/.x.cu", true],
  ])("%s against %s is %s", (pattern, path, expected) => {
    expect(globMatcher(pattern)(path)).toBe(expected);
  });

  it("takes back with a later !pattern and adds back with a later positive one", () => {
    const filter = pathFilter(["kernels/**", "!kernels/**/*.md", "kernels/keep/README.md"]);
    expect(filter("kernels/softmax/kernel.cu")).toBe(true);
    expect(filter("kernels/softmax/README.md")).toBe(false);
    expect(filter("kernels/keep/README.md")).toBe(true);
    expect(filter("docs/a.cu")).toBe(false);
  });

  it("the app's planner and the runner's selection agree on a negation", () => {
    const config = { tasks: ["kernels"], paths: ["**/*.cu", "**/*.cuh", "!**/test_*.cu"] };
    const tasks = [{ path: "kernels/softmax" }, { path: "kernels/gemm" }];
    for (const changed of [
      ["kernels/softmax/test_x.cu"],
      ["kernels/softmax/kernel.cu", "kernels/gemm/test_y.cu"],
      ["include/common.cuh"],
    ]) {
      const plan = planTasks(
        config,
        changed.map((filename) => ({ filename })),
      );
      const touched = selectChangedTasks({
        changed,
        baseTasks: tasks,
        headTasks: tasks,
        paths: config.paths,
      }).map((task) => task.path);
      const planned =
        plan.kind === "all"
          ? tasks.map((task) => task.path).sort()
          : plan.kind === "none"
            ? []
            : [...plan.tasks];
      expect(touched, changed.join(",")).toEqual(planned);
    }
  });

  it("the config refuses what GitHub means differently, and says why", () => {
    for (const [paths, words] of [
      [["kernels/?.cu"], "zero or one"],
      [["kernels/a+.cu"], "one or more"],
      [["kernels/@(a|b).cu"], "extended globs"],
      [["kernels/[ab.cu"], "not closed"],
      [["!kernels/x.cu"], "only negations"],
    ] as const) {
      const parsed = parseConfig({ paths });
      expect(parsed.ok, paths.join()).toBe(false);
      if (!parsed.ok) expect(parsed.errors.join("\n")).toContain(words);
    }
    const tasks = parseConfig({ tasks: ["kernels", "!kernels/old"] });
    expect(tasks.ok).toBe(false);
    expect(parseConfig({ paths: ["kernels/**", "!kernels/**/*.md"] }).ok).toBe(true);
  });
});
