import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { UsageError } from "../../../runner/src/errors.js";
import { discoverTasks, resolveTask } from "../../../runner/src/workspace/discover.js";
import { repo } from "../../helpers/cli.js";

const fixtures = join(repo, "test", "fixtures");

describe("discoverTasks", () => {
  it("finds all three shapes of task under a folder", async () => {
    const found = await discoverTasks([fixtures]);
    const byFormat = (format: string) =>
      found
        .filter((task) => task.format === format)
        .map((task) => task.path.slice(fixtures.length + 1));
    expect(byFormat("native")).toContain("tasks/small_relu");
    expect(byFormat("kernelbench")).toEqual([
      "kernelbench/23_Softmax.py",
      "kernelbench/76_Gemm_Add_ReLU.py",
    ]);
    expect(byFormat("robust-kbench")).toEqual([
      "robust-kbench/linear_relu",
      "robust-kbench/linear_relu#backward",
    ]);
  });

  it("lists a robust-kbench folder's backward task beside its forward one", async () => {
    const found = await discoverTasks([join(fixtures, "robust-kbench")]);
    expect(found.map((task) => [task.name, task.backward])).toEqual([
      ["linear_relu", false],
      ["linear_relu#backward", true],
    ]);
    expect(new Set(found.map((task) => task.folder))).toEqual(
      new Set([join(fixtures, "robust-kbench", "linear_relu")]),
    );
  });

  it("does not take a ModelNew candidate or a task's own files for tasks", async () => {
    const found = await discoverTasks([fixtures]);
    expect(found.some((task) => task.path.includes("kernelbench_modelnew"))).toBe(false);
    expect(found.some((task) => task.path.endsWith("reference.py"))).toBe(false);
  });

  it("lists a task named twice once", async () => {
    const path = join(fixtures, "tasks", "small_relu");
    expect(await discoverTasks([path, path, join(fixtures, "tasks")])).toHaveLength(
      (await discoverTasks([join(fixtures, "tasks")])).length,
    );
  });
});

describe("resolveTask", () => {
  it("takes a path to a task folder or a KernelBench file", async () => {
    expect(await resolveTask("test/fixtures/tasks/small_relu", repo)).toMatchObject({
      name: "small_relu",
      format: "native",
    });
    expect(await resolveTask(join(fixtures, "kernelbench", "23_Softmax.py"), "/")).toMatchObject({
      name: "23_Softmax",
      format: "kernelbench",
    });
  });

  it("takes the name of a folder under kernels/", async () => {
    expect(await resolveTask("softmax", "/")).toMatchObject({
      format: "native",
      path: join(repo, "kernels", "softmax"),
    });
  });

  it("names a robust-kbench backward task with #backward", async () => {
    const task = await resolveTask("test/fixtures/robust-kbench/linear_relu#backward", repo);
    expect(task).toMatchObject({
      name: "linear_relu#backward",
      format: "robust-kbench",
      backward: true,
      path: `${join(fixtures, "robust-kbench", "linear_relu")}#backward`,
      folder: join(fixtures, "robust-kbench", "linear_relu"),
    });
  });

  it("says why a #backward name has no backward task", async () => {
    await expect(resolveTask("softmax#backward", repo)).rejects.toThrow(
      /only robust-kbench folders have a #backward task/,
    );
    await expect(resolveTask("no_such_task#backward", repo)).rejects.toThrow(UsageError);
  });

  it("says what to give when nothing matches", async () => {
    await expect(resolveTask("no_such_task", repo)).rejects.toThrow(UsageError);
    await expect(resolveTask("no_such_task", repo)).rejects.toThrow(/evokernel tasks/);
    await expect(resolveTask("test/fixtures", repo)).rejects.toThrow(/is not a task/);
  });
});
