// writeData writes whole or not at all: the search rewrites a candidate's source file (named by
// its hash) while another candidate of the same source is read from it.
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
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
});
