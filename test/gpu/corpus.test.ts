// On a GPU machine (EVOKERNEL_GPU_TESTS=1): every candidate in runner/corpus/manifest.json,
// taken through the same cascade `evokernel verify` / `bench` use, gets its expected verdict:
// correct kernels pass, each hack is rejected for one of the reasons the manifest allows.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  meetsExpectation,
  readManifest,
  type CorpusEntry,
} from "../../runner/src/corpus/manifest.js";
import { runCascade, type CandidateResult } from "../../runner/src/cascade.js";
import { ForkServer } from "../../runner/src/harness/client.js";
import { repo } from "../helpers/cli.js";

type Entry = CorpusEntry;

const enabled = process.env["EVOKERNEL_GPU_TESTS"] === "1";
const entries: Entry[] = enabled
  ? await readManifest(join(repo, "runner", "corpus", "manifest.json"))
  : [];

describe.skipIf(!enabled)("the adversarial corpus on the GPU", () => {
  const server = new ForkServer();
  const results = new Map<string, CandidateResult>();

  beforeAll(async () => {
    // One cascade per task and check, so a task's candidates build in parallel.
    const groups = new Map<string, Entry[]>();
    for (const entry of entries) {
      const key = `${entry.task}\n${entry.check}`;
      groups.set(key, [...(groups.get(key) ?? []), entry]);
    }
    for (const group of groups.values()) {
      const first = group[0];
      if (first === undefined) continue;
      const evaluated = await runCascade(
        join(repo, first.task),
        group.map((entry) => join(repo, entry.file)),
        { server, heldout: true, ...(first.check === "bench" ? { bench: {} } : {}) },
      );
      group.forEach((entry, index) => {
        const result = evaluated[index];
        if (result !== undefined) results.set(entry.file, result);
      });
    }
  }, 1_800_000);
  afterAll(() => server.close());

  it("reads a manifest that has entries for every check", () => {
    expect(entries.length).toBeGreaterThan(0);
    expect(new Set(entries.map((entry) => entry.check))).toEqual(new Set(["verify", "bench"]));
  });

  it.each(entries.map((entry) => [entry.file, entry]))("%s", (_file, entry) => {
    const result = results.get(entry.file);
    const seen = `${result?.status} ${result?.reason}: ${result?.message}`;
    expect(result, seen).toBeDefined();
    if (result !== undefined) expect(meetsExpectation(entry, result), seen).toBe(true);
  });
});
