// The offline tuner: seeded and reproducible, never proposes a vector twice, only
// precision-keeping flags, says so when there is nothing to tune, learns from fitness, and
// its source edits still compile (where nvcc is installed; CI has it).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Proposal, ProposalResult } from "../../../runner/src/evolve/types.js";
import { childEnv, runProcess } from "../../../runner/src/harness/exec.js";
import {
  FLAG_DIMENSIONS,
  isPrecisionSafeFlag,
  PRECISION_LOWERING,
} from "../../../runner/src/proposers/compile-flags.js";
import { applyTunables, detectTunables } from "../../../runner/src/proposers/detect-tunables.js";
import { createTuner, type Tuner } from "../../../runner/src/proposers/tuner.js";
import { createLimit } from "../../../runner/src/util/limit.js";
import { repo } from "../../helpers/cli.js";
import { inCi } from "../../helpers/python.js";
import { context, evaluation, individual } from "./helpers.js";
import { stepWithinConstraints } from "../../helpers/tunables.js";

// the first built-in softmax (one knob, BLOCK_SIZE): kernels/softmax is a template now
const softmax = readFileSync(
  join(repo, "test", "fixtures", "kernels", "softmax-block", "kernel.cu"),
  "utf8",
);
const softmaxTunables = { BLOCK_SIZE: [128, 256, 512, 1024] };
const baseline = individual("c0", softmax, 1);

function proposalOf(result: ProposalResult): Proposal {
  if (!result.ok) throw new Error(`expected a proposal, got ${result.reason}: ${result.message}`);
  return result.proposal;
}

function keyOf(p: Pick<Proposal, "source" | "defines" | "flags">): string {
  return JSON.stringify([p.source, Object.entries(p.defines).sort(), p.flags ?? []]);
}

/**
 * `count` proposals in a row. With `score`, each result goes back to the tuner: through
 * observe() (`via: "observe"`), or only as the context's best so far, as the engine passes it
 * (`via: "context"`).
 */
async function run(
  tuner: Tuner,
  count: number,
  score?: (p: Proposal) => number | null,
  via: "observe" | "context" = "observe",
) {
  const out: Proposal[] = [];
  let best = baseline;
  for (let i = 0; i < count; i++) {
    const result = await tuner.propose(context(best, { seed: i }));
    if (!result.ok) break;
    out.push(result.proposal);
    if (!score) continue;
    const fitness = score(result.proposal);
    const child = individual(`c${i + 1}`, result.proposal.source, fitness, {
      defines: result.proposal.defines,
      flags: result.proposal.flags ?? [],
      evaluation: evaluation(fitness),
    });
    if (via === "observe") tuner.observe(child);
    else if (fitness !== null && fitness > (best.evaluation.fitness ?? 0)) best = child;
  }
  return out;
}

describe("tuner", () => {
  it("is the same under the same seed, and differs under another", async () => {
    const make = (seed: number) =>
      createTuner({ seed, baselineSource: softmax, tunables: softmaxTunables });
    const score = (p: Proposal) =>
      (p.source.length % 7) / 3 + Number(p.defines["BLOCK_SIZE"] ?? 256) / 1000;
    const a = await run(make(7), 20, score);
    const b = await run(make(7), 20, score);
    const c = await run(make(8), 20, score);
    expect(a.map(keyOf)).toEqual(b.map(keyOf));
    expect(a.map((p) => p.name)).toEqual(b.map((p) => p.name));
    expect(a.map(keyOf)).not.toEqual(c.map(keyOf));
  });

  it("never proposes a vector twice, nor the baseline, and says when the space is spent", async () => {
    const source = "#ifndef TILE\n#define TILE 32\n#endif\n#pragma unroll 4\nfor (;;) {}\n";
    const tuner = createTuner({ seed: 3, baselineSource: source, tunables: {} });
    expect(tuner.spaceSize).toBe(3 * 5);
    const proposals = await run(tuner, 100, () => 1);
    expect(proposals).toHaveLength(tuner.spaceSize - 1);
    const keys = proposals.map(keyOf);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys).not.toContain(keyOf({ source, defines: {} }));
    const last = await tuner.propose(context(individual("c0", source, 1)));
    expect(last).toMatchObject({ ok: false, reason: "search-exhausted", final: true });
  });

  it("does not repeat itself when proposals run in parallel, before any result", async () => {
    const tuner = createTuner({ seed: 1, baselineSource: softmax, tunables: softmaxTunables });
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => tuner.propose(context(baseline, { seed: i }))),
    );
    const keys = results.map(proposalOf).map(keyOf);
    expect(new Set(keys).size).toBe(12);
  });

  it("carries -D values for guarded macros and edits the source for the rest", async () => {
    const tuner = createTuner({ seed: 5, baselineSource: softmax, tunables: softmaxTunables });
    const proposals = await run(tuner, 30);
    for (const p of proposals) {
      expect(Object.keys(p.defines).every((name) => name === "BLOCK_SIZE")).toBe(true);
      expect(
        p.source === softmax ||
          /#pragma unroll (1|2|8|16)\b|__launch_bounds__\(BLOCK_SIZE, \d\)/.test(p.source),
      ).toBe(true);
      expect(p.insight).toMatch(/^Tuner \(genetic search over 3 parameters/);
      expect(p.flags).toBeUndefined();
    }
    expect(proposals.some((p) => p.defines["BLOCK_SIZE"] !== undefined)).toBe(true);
    expect(proposals.some((p) => p.source !== softmax)).toBe(true);
  });

  // Fitness peaks at BLOCK_SIZE 1024, unroll 16, no min-blocks, the corner farthest from
  // the baseline: 60 vectors in all, found in 30 proposals only by following the fitness.
  const landscape = (p: Proposal) => {
    const block = Number(p.defines["BLOCK_SIZE"] ?? 256);
    const unroll = Number(/#pragma unroll (\d+)/.exec(p.source)?.[1] ?? 4);
    const minBlocks = /BLOCK_SIZE, (\d)\)/.exec(p.source) === null ? 0 : 1;
    return 2 - Math.log2(1024 / block) * 0.2 - Math.log2(16 / unroll) * 0.1 - minBlocks * 0.3;
  };

  it.each(["observe", "context"] as const)(
    "climbs a smooth landscape, learning through %s",
    async (via) => {
      for (const seed of [1, 2, 3, 4, 5]) {
        const tuner = createTuner({ seed, baselineSource: softmax, tunables: softmaxTunables });
        expect(tuner.spaceSize).toBe(4 * 3 * 5);
        const proposals = await run(tuner, 30, landscape, via);
        expect(Math.max(...proposals.map(landscape)), `seed ${seed}`).toBeCloseTo(2);
      }
    },
  );

  it("follows the engine's parents: a crossover's genes come from its two parents", async () => {
    const tuner = createTuner({ seed: 9, baselineSource: softmax, tunables: softmaxTunables });
    const [a, b] = await run(tuner, 2);
    if (a === undefined || b === undefined) throw new Error("expected two proposals");
    const parentA = individual("c1", a.source, 1.2, { defines: a.defines });
    const parentB = individual("c2", b.source, 1.1, { defines: b.defines });
    tuner.observe(parentA);
    tuner.observe(parentB);
    const child = proposalOf(
      await tuner.propose(
        context(parentA, { operator: "crossover", parents: [parentA, parentB], config: "full" }),
      ),
    );
    expect(child.insight).toContain("crossover of two parents");
    const genes = (p: Proposal) => [
      p.defines["BLOCK_SIZE"] ?? "256",
      /BLOCK_SIZE, (\d)\)/.exec(p.source)?.[1] ?? "-",
      /#pragma unroll (\d+)/.exec(p.source)?.[1] ?? "4",
    ];
    const fromParents = genes(child).filter((g, i) => g === genes(a)[i] || g === genes(b)[i]);
    expect(fromParents.length).toBeGreaterThanOrEqual(2); // at most one gene mutated away
  });

  it("recognises the candidates of an earlier run (a resumed archive) and never repeats them", async () => {
    const make = () =>
      createTuner({
        seed: 11,
        baselineSource: softmax,
        tunables: softmaxTunables,
        compileFlags: false,
      });
    const first = await run(make(), 25);
    const resumed = make();
    first.forEach((p, i) => {
      resumed.observe(
        individual(`c${i + 1}`, p.source, i === 24 ? 1.5 : 1.01, {
          defines: p.defines,
          evaluation: evaluation(i === 24 ? 1.5 : 1.01),
        }),
      );
    });
    const next = await run(resumed, 34);
    expect(next).toHaveLength(60 - 1 - 25); // what is left of the space, and no more
    const before = new Set(first.map(keyOf));
    expect(next.filter((p) => before.has(keyOf(p)))).toEqual([]);
  });

  it("ignores candidates it did not make", async () => {
    const make = () => createTuner({ seed: 1, baselineSource: softmax, tunables: softmaxTunables });
    const told = make();
    for (const foreign of [
      individual("l1", softmax.replace("expf(xr[j] - m) / s", "expf(xr[j] - m) * (1.f / s)"), 2),
      individual("l2", softmax, 2, { defines: { OTHER: "1" } }),
      individual("l3", softmax, 2, { defines: { BLOCK_SIZE: "384" } }),
    ]) {
      told.observe(foreign);
    }
    expect((await run(told, 10)).map(keyOf)).toEqual((await run(make(), 10)).map(keyOf));
  });

  it("never retries a candidate that failed", async () => {
    const tuner = createTuner({ seed: 2, baselineSource: softmax, tunables: softmaxTunables });
    const proposals = await run(tuner, 59, () => null);
    expect(new Set(proposals.map(keyOf)).size).toBe(59);
  });

  it("sets aside a value that only ever failed to build", async () => {
    // TILE=64 breaks a static_assert, whatever the other knobs are.
    const source = "#ifndef TILE\n#define TILE 32\n#endif\n#pragma unroll 4\nfor (;;) {}\n";
    const tuner = createTuner({ seed: 5, baselineSource: source, tunables: {} });
    const tile = (p: Proposal) => p.defines["TILE"] ?? "32";
    const seen: Proposal[] = [];
    for (let i = 0; i < 40; i++) {
      const result = await tuner.propose(context(individual("c0", source, 1), { seed: i }));
      if (!result.ok) break;
      seen.push(result.proposal);
      const broken = tile(result.proposal) === "64";
      tuner.observe(
        individual(`c${i + 1}`, result.proposal.source, broken ? null : 1, {
          defines: result.proposal.defines,
          evaluation: evaluation(broken ? null : 1, broken ? { stage: "compile" } : {}),
        }),
      );
    }
    const sixtyFour = seen.filter((p) => tile(p) === "64");
    expect(sixtyFour).toHaveLength(1); // tried once, then never again
    expect(seen.length).toBe(tuner.spaceSize - 1 - (5 - 1)); // the other TILE=64 vectors skipped

    // one failure to build is enough to set a value aside
    const cleared = createTuner({ seed: 5, baselineSource: source, tunables: {} });
    const first = proposalOf(await cleared.propose(context(individual("c0", source, 1))));
    const failedTile = tile(first);
    cleared.observe(
      individual("c1", first.source, null, {
        defines: first.defines,
        evaluation: evaluation(null, { stage: "compile" }),
      }),
    );
    const rest = await run(cleared, 40, () => 1);
    if (failedTile !== "32") expect(rest.filter((p) => tile(p) === failedTile)).toEqual([]);
  });

  it("says there is nothing to tune when there is nothing", async () => {
    const tuner = createTuner({
      seed: 1,
      baselineSource: "__global__ void k(float* x) { x[0] = 1.f; }\n",
      tunables: {},
    });
    const result = await tuner.propose(context(individual("c0", "", 1)));
    expect(result).toMatchObject({ ok: false, reason: "nothing-to-tune", final: true });
    if (!result.ok) expect(result.message).toMatch(/no #define or constexpr knob/);
    expect(result.usage).toEqual({
      inputTokens: 0,
      outputTokens: 0,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      usd: 0,
    });
  });
});

describe("compile flags", () => {
  it("offers only flags that keep precision", () => {
    for (const dim of FLAG_DIMENSIONS) {
      for (const flag of dim.values) {
        if (flag === null) continue;
        expect(isPrecisionSafeFlag(flag), flag).toBe(true);
        expect(flag).not.toMatch(PRECISION_LOWERING);
      }
    }
  });

  it("refuses every precision-lowering spelling", () => {
    for (const flag of [
      "--use_fast_math",
      "-use_fast_math",
      "-ftz=true",
      "--ftz=true",
      "-prec-div=false",
      "--prec-sqrt=false",
      "--fmad=true",
      "-Xptxas=-O3 --use_fast_math",
      "-maxrregcount=64 -ftz=true",
      "-DFAST=1",
    ]) {
      expect(isPrecisionSafeFlag(flag), flag).toBe(false);
    }
  });

  it("the tuner searches flags only when asked, and every flag it picks is safe", async () => {
    const tuner = createTuner({
      seed: 4,
      baselineSource: softmax,
      tunables: softmaxTunables,
      compileFlags: true,
    });
    expect(tuner.dimensions.map((d) => d.id)).toEqual([
      "BLOCK_SIZE",
      "min-blocks",
      "unroll(4)",
      "flag:maxrregcount",
      "flag:dlcm",
      "flag:extra-device-vectorization",
    ]);
    const proposals = await run(tuner, 40);
    expect(new Set(proposals.map(keyOf)).size).toBe(proposals.length);
    const flags = proposals.flatMap((p) => p.flags ?? []);
    expect(flags.length).toBeGreaterThan(0);
    for (const flag of flags) {
      expect(isPrecisionSafeFlag(flag), flag).toBe(true);
      expect(flag).not.toMatch(/fast.?math|ftz|prec-div|prec-sqrt/);
    }
  });

  it("tells apart candidates that differ only in flags, and reads flags back on resume", async () => {
    const make = () =>
      createTuner({
        seed: 9,
        baselineSource: softmax,
        tunables: softmaxTunables,
        compileFlags: true,
      });
    const first = await run(make(), 30, (p) => 1 + (p.flags ?? []).length / 10);
    const withFlags = first.filter((p) => (p.flags ?? []).length > 0);
    expect(withFlags.length).toBeGreaterThan(0);
    const resumed = make();
    first.forEach((p, i) => {
      resumed.observe(
        individual(`c${i + 1}`, p.source, 1, {
          defines: p.defines,
          flags: p.flags ?? [],
          evaluation: evaluation(1),
        }),
      );
    });
    const before = new Set(first.map(keyOf));
    const next = await run(resumed, 30);
    expect(next.filter((p) => before.has(keyOf(p)))).toEqual([]);
    // a flag off the allow-list marks a candidate as not the tuner's
    const foreign = make();
    foreign.observe(individual("x", softmax, 5, { flags: ["--use_fast_math"] }));
    expect((await run(foreign, 5)).map(keyOf)).toEqual((await run(make(), 5)).map(keyOf));
  });
});

// The tuner's edits must still compile: each kernel with every tunable moved one step.
function findNvcc(): string | null {
  const onPath = (process.env["PATH"] ?? "").split(delimiter).map((dir) => join(dir, "nvcc"));
  return [...onPath, "/usr/local/cuda/bin/nvcc"].find((file) => existsSync(file)) ?? null;
}

const nvcc = findNvcc();
const kernels = readdirSync(join(repo, "kernels")).sort();
const limit = createLimit(2);
const out = await mkdtemp(join(tmpdir(), "evokernel-tuner-"));
afterAll(() => rm(out, { recursive: true, force: true }));

describe.skipIf(nvcc === null && !inCi)("tuned kernels still compile (nvcc, sm_90)", () => {
  it.concurrent.each(kernels)(
    "%s",
    async (name) => {
      const task = JSON.parse(readFileSync(join(repo, "kernels", name, "task.json"), "utf8")) as {
        kernel: string;
        tunables?: Record<string, (string | number)[]>;
        constraints?: string[];
      };
      const source = readFileSync(join(repo, "kernels", name, task.kernel), "utf8");
      if (source.includes("PYBIND11_MODULE")) return;
      const tunables = detectTunables(source, task.tunables ?? {});
      // One step down where there is one (up otherwise): every dimension moves at once, as far
      // as the task's constraints allow.
      const choice = stepWithinConstraints(tunables, task.constraints);
      const applied = applyTunables(source, tunables, choice);
      expect(applied.source).not.toBe(source);
      const file = join(out, `${name}.cu`);
      await writeFile(file, applied.source);
      const defines = Object.entries(applied.defines).map(([k, v]) => `-D${k}=${v}`);
      const args = ["-O3", "-std=c++17", "-arch=sm_90", "-c", "-o", join(out, `${name}.o`)];
      const include = ["-I", join(repo, "runner", "harness", "include")];
      const compiled = await limit(() =>
        runProcess(nvcc ?? "nvcc", [...args, ...include, ...defines, file], {
          env: childEnv(),
          timeoutMs: 600_000,
        }),
      );
      expect(compiled.exitCode === 0 ? 0 : compiled.output).toBe(0);
    },
    600_000,
  );
});
