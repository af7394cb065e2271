// writeData writes whole or not at all: the search rewrites a candidate's source file (named by
// its hash) while another candidate of the same source is read from it. A stream (a FIFO,
// /dev/stdout, /dev/null) is written into, never renamed over.
import { execFile } from "node:child_process";
import { lstat, mkdtemp, readdir, readFile, rm, symlink } from "node:fs/promises";
import { promisify } from "node:util";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { writeData } from "../../../runner/src/workspace/files.js";

describe("writeData", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "evk-files-"));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it("never shows a reader a half-written file, and leaves nothing beside it", async () => {
    const file = join(dir, "62365cb53a502c7f.cu");
    const source = `extern "C" int evk_forward(const EvkCall* call) { return 0; }\n${"// pad\n".repeat(200_000)}`;
    await writeData(file, source);
    const reads: Promise<string>[] = [];
    const writes: Promise<void>[] = [];
    for (let i = 0; i < 30; i += 1) {
      writes.push(writeData(file, source));
      for (let k = 0; k < 5; k += 1) reads.push(readFile(file, "utf8"));
    }
    await Promise.all(writes);
    const seen = await Promise.all(reads);
    expect(seen.filter((text) => text !== source).map((text) => text.length)).toEqual([]);
    expect(await readdir(dir)).toEqual(["62365cb53a502c7f.cu"]);
  });

  it.each([
    ["a FIFO", false],
    ["a link to a FIFO (as /dev/stdout is)", true],
  ])("writes into %s and leaves it one", async (_what, linked) => {
    const fifo = join(dir, "pipe");
    await promisify(execFile)("mkfifo", [fifo]);
    const path = linked ? join(dir, "stdout") : fifo;
    if (linked) await symlink(fifo, path);
    const reader = promisify(execFile)("cat", [fifo]);
    await writeData(path, '{"ok":true}\n');
    expect((await reader).stdout).toBe('{"ok":true}\n');
    expect((await lstat(fifo)).isFIFO()).toBe(true);
    expect((await lstat(path)).isSymbolicLink()).toBe(linked);
    expect((await readdir(dir)).sort()).toEqual(linked ? ["pipe", "stdout"] : ["pipe"]);
  });
});
