// A task's id and its `#backward` suffix, read in one place (src/shared/task-id.ts, issue 37.2:
// the same regex was copied into eight places of the app and the runner).
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  backwardTaskId,
  isBackwardTaskId,
  taskFolder,
  taskHolds,
} from "../../src/shared/task-id.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

describe("task ids", () => {
  it("a backward task's id is its folder's path with #backward", () => {
    expect(backwardTaskId("kernels/rk/layernorm")).toBe("kernels/rk/layernorm#backward");
    expect(isBackwardTaskId("kernels/rk/layernorm#backward")).toBe(true);
    expect(isBackwardTaskId("kernels/rk/layernorm")).toBe(false);
  });

  it("the folder of a task id: the id less its #… suffix, a # inside a folder's name kept", () => {
    expect(taskFolder("kernels/rk/layernorm#backward")).toBe("kernels/rk/layernorm");
    expect(taskFolder("kernels/rk/layernorm")).toBe("kernels/rk/layernorm");
    expect(taskFolder("kernels/kb/level1/19_ReLU.py")).toBe("kernels/kb/level1/19_ReLU.py");
    expect(taskFolder("kernels/a#b/task")).toBe("kernels/a#b/task");
  });

  it("a task holds its folder and what is beneath it, a backward task its folder's", () => {
    expect(taskHolds("kernels/rk/ln#backward", "kernels/rk/ln/func_backward.py")).toBe(true);
    expect(taskHolds("kernels/rk/ln#backward", "kernels/rk/ln")).toBe(true);
    expect(taskHolds("kernels/rk/ln", "kernels/rk/ln2/kernel.cu")).toBe(false);
    expect(taskHolds("kernels/rk/ln", "kernels/rk")).toBe(false);
  });

  it("no module of the app or the runner cuts the suffix off by a regex of its own", () => {
    const copies = ["src", "runner/src"]
      .flatMap((dir) => sources(join(root, dir)))
      .filter((file) => !file.endsWith(join("src", "shared", "task-id.ts")))
      .filter((file) => /\/#\[\^\/\]\*\$\/|#backward\$\//.test(readFileSync(file, "utf8")))
      .map((file) => relative(root, file));
    expect(copies).toEqual([]);
  });
});
