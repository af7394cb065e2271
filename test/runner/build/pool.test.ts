import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createBuildPool, type BuildFn } from "../../../runner/src/build/pool.js";
import { createGpuQueue } from "../../../runner/src/gpu/queue.js";
import { buildRecord } from "../../helpers/records.js";

const dir = await mkdtemp(join(tmpdir(), "evokernel-pool-"));
async function source(name: string, text: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, text);
  return file;
}

function countingBuild(delayMs = 20) {
  const state = { calls: 0, running: 0, most: 0 };
  const build: BuildFn = async () => {
    state.calls += 1;
    state.running += 1;
    state.most = Math.max(state.most, state.running);
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    state.running -= 1;
    return buildRecord();
  };
  return { state, build };
}

describe("build pool", () => {
  it("hands a Python candidate's task to its build, and builds it once per task", async () => {
    const tasks: (string | undefined)[] = [];
    const build: BuildFn = async (_candidate, _defines, _flags, task) => {
      tasks.push(task === undefined ? undefined : typeof task === "string" ? task : task.path);
      await new Promise((resolve) => setTimeout(resolve, 20)); // in flight while the others ask
      return buildRecord();
    };
    const pool = createBuildPool({ build, concurrency: 4 });
    const py = await source("lazy.py", "class ModelNew: ...  # load_inline in __init__");
    const cu = await source("plain.cu", "kernel P");
    await Promise.all([
      pool.build(py, {}, [], "problems/1_A.py"),
      pool.build(py, {}, [], "problems/1_A.py"),
      pool.build(py, {}, [], "problems/2_B.py"),
    ]);
    expect(tasks.sort()).toEqual(["problems/1_A.py", "problems/2_B.py"]);
    tasks.length = 0;
    await Promise.all([pool.build(cu, {}, [], "problems/1_A.py"), pool.build(cu)]);
    expect(tasks).toHaveLength(1); // a .cu build is the same whatever task it is for
  });

  it("builds the same source under other nvcc flags separately", async () => {
    const { state, build } = countingBuild();
    const pool = createBuildPool({ build, concurrency: 4 });
    const a = await source("flags.cu", "kernel F");
    await Promise.all([
      pool.build(a, {}, ["-maxrregcount=64"]),
      pool.build(a, {}, ["-maxrregcount=64"]),
      pool.build(a, {}, []),
      pool.build(a),
    ]);
    expect(state.calls).toBe(2);
  });

  it("shares one build between identical sources with identical defines", async () => {
    const { state, build } = countingBuild();
    const pool = createBuildPool({ build, concurrency: 4 });
    const a = await source("a.cu", "kernel A");
    const copy = await source("copy-of-a.cu", "kernel A");
    await Promise.all([
      pool.build(a),
      pool.build(copy),
      pool.build(a, {}),
      pool.build(a, { BLOCK: 128 }),
    ]);
    expect(state.calls).toBe(2);
  });

  it("builds different sources separately, at most `concurrency` at once", async () => {
    const { state, build } = countingBuild();
    const pool = createBuildPool({ build, concurrency: 2 });
    const files = await Promise.all([1, 2, 3, 4, 5].map((n) => source(`k${n}.cu`, `kernel ${n}`)));
    await Promise.all(files.map((file) => pool.build(file)));
    expect(state.calls).toBe(5);
    expect(state.most).toBe(2);
  });

  it("builds again once the earlier build has finished (the harness cache answers then)", async () => {
    const { state, build } = countingBuild(1);
    const pool = createBuildPool({ build });
    const file = await source("again.cu", "kernel again");
    await pool.build(file);
    await pool.build(file);
    expect(state.calls).toBe(2);
  });
});

describe("GPU queue", () => {
  it("runs one piece of work at a time, in order", async () => {
    const gpu = createGpuQueue();
    const order: string[] = [];
    let running = 0;
    const work = (name: string) =>
      gpu(async () => {
        running += 1;
        expect(running).toBe(1);
        order.push(name);
        await new Promise((resolve) => setTimeout(resolve, 5));
        running -= 1;
      });
    await Promise.all(["a", "b", "c"].map(work));
    expect(order).toEqual(["a", "b", "c"]);
  });
});
