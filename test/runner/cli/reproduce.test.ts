// A verdict's reproduction line (issue 36.1): what it names, that the CLI's own option tables
// take every word of it, and that a printed line run against the harness on the CPU (a py
// candidate, --device cpu) gives the same verdict from the same inputs.
import { parseArgs } from "node:util";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { benchCommand } from "../../../runner/src/cli/bench.js";
import { verifyCommand } from "../../../runner/src/cli/verify.js";
import { benchLine, shellWord, verifyConfigs, verifyLine } from "../../../src/shared/reproduce.js";
import { reproductionOf } from "../../../src/shared/review.js";
import { passedTask, wrongTask } from "../../helpers/review-fixtures.js";
import { runCli } from "../../helpers/cli.js";
import { skipWithoutPython } from "../../helpers/python.js";

/** The words of a line as a POSIX shell splits them (plain words and '…' quoting only). */
function shellSplit(line: string): string[] {
  const words: string[] = [];
  for (const match of line.matchAll(/(?:[^\s']+|'[^']*')+/g)) {
    words.push(match[0].replace(/'([^']*)'/g, "$1"));
  }
  return words;
}

/** The evokernel command of a line: its words after `npx evokernel@V`, parsed by the CLI's tables. */
function commandOf(line: string) {
  const evokernel = line.slice(line.indexOf("npx "));
  const [npx, pkg, name, ...args] = shellSplit(evokernel);
  expect([npx, pkg]).toEqual(["npx", "evokernel@0.1.0"]);
  const command = name === "verify" ? verifyCommand : benchCommand;
  expect(command.name).toBe(name);
  const parsed = parseArgs({
    args,
    options: command.options,
    allowPositionals: true,
    strict: true,
  });
  return { name, args, parsed };
}

const configs = [
  { name: "a", heldout: false, ok: true },
  { name: "b", heldout: false, ok: false },
  { name: "c", heldout: false, ok: false },
  { name: "h", heldout: true, ok: true },
];

describe("which configurations a verify line names", () => {
  it("the ones up to the first that failed: the verdict rests on those run before it", () => {
    expect(verifyConfigs({ ok: false, reason: "mismatch", seed: 1, configs })).toEqual(["a", "b"]);
  });

  it("all of them for a pass, a shape-specific verdict, or a failure on the last", () => {
    expect(verifyConfigs({ ok: true, reason: null, seed: 1, configs })).toBeNull();
    expect(verifyConfigs({ ok: false, reason: "shape-specific", seed: 1, configs })).toBeNull();
    const last = configs.map((config) => ({ ...config, ok: config.name !== "h" }));
    expect(verifyConfigs({ ok: false, reason: "mismatch", seed: 1, configs: last })).toBeNull();
  });

  it("says --heldout when all of them ran, held-out ones among them", () => {
    const line = verifyLine("0.1.0", "kernels/x", "kernels/x/k.cu", {
      ok: true,
      reason: null,
      seed: 7,
      configs,
    });
    expect(line).toBe(
      "npx evokernel@0.1.0 verify kernels/x --candidate kernels/x/k.cu --seed 7 --heldout",
    );
  });

  it("gives no line without a seed, and no version that is not a release's", () => {
    expect(
      verifyLine("0.1.0", "t", "k", { ok: false, reason: "x", seed: null, configs }),
    ).toBeNull();
    expect(benchLine("unknown", "t", "k", 3)).toBe("npx evokernel bench t --candidate k --seed 3");
  });

  it("quotes what a shell would read otherwise", () => {
    expect(shellWord("kernels/a b")).toBe("'kernels/a b'");
    expect(shellWord("it's")).toBe("'it'\\''s'");
    expect(shellWord("folder#backward")).toBe("'folder#backward'");
    expect(shellSplit(`x ${shellWord("a b")} ${shellWord("c")}`)).toEqual(["x", "a b", "c"]);
  });
});

describe("a review's lines", () => {
  const commits = { sha: "a".repeat(40), baseSha: "b".repeat(40) };

  it("verify: the seed and the configurations up to the failure, in the CLI's own options", () => {
    const wrong = wrongTask("row_sum");
    const { verify, bench } = reproductionOf(wrong, "0.1.0", commits);
    expect(bench).toBeNull();
    const { args, parsed } = commandOf(verify ?? "");
    expect(parsed.positionals).toEqual(["kernels/row_sum"]);
    // it failed on the last configuration: the line runs them all
    expect(parsed.values).toMatchObject({
      candidate: ["kernels/row_sum/kernel.cu"],
      seed: "1804289383",
    });
    expect(args).not.toContain("--config");
    const first = wrong.verification!.configs.map((config) => ({ ...config, ok: false }));
    const early = { ...wrong, verification: { ...wrong.verification!, configs: first } };
    expect(
      commandOf(reproductionOf(early, "0.1.0", commits).verify ?? "").parsed.values.config,
    ).toEqual(["8192x8192"]);
  });

  it("bench: the timing's seed, the slower configurations, base's kernel beside it", () => {
    const timing = {
      name: "odd",
      floorMs: 0.1,
      base: { medianMs: 1, p20Ms: 0.99, p80Ms: 1.01 },
      head: { medianMs: 1.3, p20Ms: 1.29, p80Ms: 1.31 },
      eager: null,
      compile: null,
      evolved: null,
      percentOfFloor: { base: 10, head: 7.7 },
      launchBound: false,
      speedup: 1 / 1.3,
      change: "slower" as const,
    };
    const task = passedTask("softmax", [timing, { ...timing, name: "big", change: "same" }]);
    const { bench } = reproductionOf(task, "0.1.0", commits);
    expect(bench).toMatch(
      /^git show "\$\(git merge-base b{40} a{40}\)":kernels\/softmax\/kernel\.cu > \/tmp\/evokernel-base\.cu && npx /,
    );
    const { parsed } = commandOf(bench ?? "");
    expect(parsed.values).toMatchObject({
      candidate: "kernels/softmax/kernel.cu",
      seed: "7717",
      config: ["odd"],
      baseline: "/tmp/evokernel-base.cu",
    });
  });
});

const relu = join("test", "fixtures", "tasks", "small_relu");
const copy = join(relu, "candidate_copy.py"); // right on [0, 1) inputs only

type Verdict = {
  status: string;
  reason: string | null;
  reproduce: string | null;
  verify: {
    seed: number;
    mismatch: unknown;
    configs: { name: string; ok: boolean; reason: string | null; maxAbs: number }[];
  };
};

async function verifyJson(args: readonly string[]): Promise<Verdict> {
  const run = await runCli([...args, "--json"]);
  expect(run.exitCode, run.stderr).toBe(1);
  const [candidate] = (JSON.parse(run.stdout) as { candidates: Verdict[] }).candidates;
  if (candidate === undefined) throw new Error("no candidate in verify --json");
  return candidate;
}

describe.skipIf(skipWithoutPython)("a printed line, run on the CPU", () => {
  it("gives the verdict it was printed beside, from the same inputs", async () => {
    const full = await verifyJson(["verify", relu, "-c", copy, "--heldout", "--device", "cpu"]);
    expect(full.status).toBe("rejected");
    // the line of a review's verification (all configurations ran, held-out ones too)
    const line = verifyLine("0.1.0", relu, copy, {
      ...full.verify,
      ok: false,
      reason: full.reason,
      configs: full.verify.configs.map((config) => ({ ...config, heldout: false })),
      device: "cpu",
    });
    expect(line).toBe(full.reproduce);
    const { args } = commandOf(line ?? "");
    expect(args).toContain("--config");
    const again = await verifyJson(["verify", ...args]);
    expect([again.status, again.reason]).toEqual([full.status, full.reason]);
    expect(again.verify.seed).toBe(full.verify.seed);
    expect(again.verify.mismatch).toEqual(full.verify.mismatch);
    const named = new Set(again.verify.configs.map((config) => config.name));
    expect(again.verify.configs).toEqual(full.verify.configs.filter((c) => named.has(c.name)));
    // its own line names the same run again
    expect(again.reproduce).toBe(line);
  }, 300_000);
});
