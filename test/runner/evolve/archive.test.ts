// The JSONL archive: one line per candidate, parsed with zod on the way back in; a line cut
// short by a crash is dropped, anything else unreadable is refused.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { UsageError } from "../../../runner/src/errors.js";
import {
  fileArchive,
  parseArchive,
  readArchive,
  type ArchiveEntry,
} from "../../../runner/src/evolve/archive.js";
import { evaluationOf, usage } from "./fakes.js";

function entry(slot: number): ArchiveEntry {
  return {
    v: 1,
    seed: 7,
    config: "insight",
    generation: 1,
    slot,
    elapsedS: 12.5,
    at: "2026-11-21T12:00:00.000Z",
    usage: usage(0.01),
    individual: {
      id: `c${slot + 1}`,
      hash: "ab".repeat(32),
      source: "__global__ void k() {} // speed=1.2",
      defines: { BLOCK: "256" },
      flags: [],
      parents: ["c0"],
      insight: "vectorised loads",
      proposer: "llm",
      evaluation: evaluationOf("speed=1.2"),
    },
    duplicateOf: null,
    failure: null,
  };
}

describe("archive", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "evokernel-archive-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("appends one line per entry and reads them back", async () => {
    const file = join(dir, "nested", "archive.jsonl");
    const archive = fileArchive(file);
    expect(await archive.load()).toEqual([]);
    await Promise.all([archive.append(entry(0)), archive.append(entry(1))]);
    const text = await readFile(file, "utf8");
    expect(text.split("\n")).toHaveLength(3);
    expect(await readArchive(file)).toEqual([entry(0), entry(1)]);
  });

  it("keeps where the seconds of verification and timing went, and what racing reads back", async () => {
    const file = join(dir, "archive.jsonl");
    const timed = entry(0);
    const individual = timed.individual;
    if (individual === null) throw new Error("entry(0) has a candidate");
    individual.evaluation = {
      ...individual.evaluation,
      // a resumed run races against these: a launch-bound configuration stays out, and each
      // configuration's floor bounds what the ones still to come could give
      timings: individual.evaluation.timings.map((t) => ({
        ...t,
        launchBound: true,
        floorMs: 0.2,
      })),
      timePhases: { load: 0.15, probe: 0.01, inputs: 0.3, timing: 1.25 },
      verifyPhases: { quick: { start: 0.2, candidate: 0.1 }, full: { reference: 0.4 } },
    };
    await fileArchive(file).append(timed);
    expect(await readArchive(file)).toEqual([timed]);
  });

  it("drops a last line cut short by a crash", async () => {
    const file = join(dir, "archive.jsonl");
    const whole = `${JSON.stringify(entry(0))}\n`;
    await writeFile(file, whole + JSON.stringify(entry(1)).slice(0, 40));
    expect(await readArchive(file)).toEqual([entry(0)]);
  });

  it("refuses a line that is not an entry, saying where", () => {
    const bad = { ...entry(1), generation: -1 };
    const text = `${JSON.stringify(entry(0))}\n${JSON.stringify(bad)}\n`;
    expect(() => parseArchive(text, "a.jsonl")).toThrow(UsageError);
    expect(() => parseArchive(text, "a.jsonl")).toThrow(/a\.jsonl line 2 .*generation/);
    expect(() => parseArchive("{not json\n", "a.jsonl")).toThrow(/line 1 .*not JSON/);
  });
});
