// A job's build cache is its own (issue 16.3): candidates may write the cache from inside the
// sandbox (builds, load_inline), so one job's writes must not be there for the next job.
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { withJobCache } from "../../../runner/src/pipeline/session.js";

let base: string;
const saved = process.env["EVOKERNEL_CACHE"];

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), "evk-cache-"));
  process.env["EVOKERNEL_CACHE"] = base;
});

afterEach(async () => {
  if (saved === undefined) delete process.env["EVOKERNEL_CACHE"];
  else process.env["EVOKERNEL_CACHE"] = saved;
  await rm(base, { recursive: true, force: true });
});

it("gives each job a fresh cache under the configured one, removed when the job ends", async () => {
  const seen: string[] = [];
  for (let job = 0; job < 2; job += 1) {
    await withJobCache(async (cache) => {
      expect(process.env["EVOKERNEL_CACHE"]).toBe(cache);
      expect(dirname(cache)).toBe(base);
      expect(await readdir(cache)).toEqual([]); // nothing from the job before
      await writeFile(join(cache, "planted.so"), "a hostile candidate's artifact");
      seen.push(cache);
    });
  }
  expect(seen[0]).not.toBe(seen[1]);
  expect(await readdir(base)).toEqual([]);
  expect(process.env["EVOKERNEL_CACHE"]).toBe(base);
});

it("removes the job's cache and restores the setting when the job fails", async () => {
  let used = "";
  await expect(
    withJobCache(async (cache) => {
      used = cache;
      await writeFile(join(cache, "planted.so"), "x");
      throw new Error("the job failed");
    }),
  ).rejects.toThrow("the job failed");
  expect(used).not.toBe("");
  expect(await readdir(base)).toEqual([]);
  expect(process.env["EVOKERNEL_CACHE"]).toBe(base);
});
