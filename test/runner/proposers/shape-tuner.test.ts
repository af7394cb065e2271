// Shape-keyed tuning: the class rule, the dispatching source (it compiles for every built-in
// evk kernel with tunables, where nvcc is installed; CI has it), and the per-class search
// against a landscape where short rows want fewer threads than long ones, with resumption.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { resultSchema } from "../../../src/shared/result.js";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Individual, Proposal, ProposalContext } from "../../../runner/src/evolve/types.js";
import { childEnv, runProcess } from "../../../runner/src/harness/exec.js";
import { applyTunables, detectTunables } from "../../../runner/src/proposers/detect-tunables.js";
import { dispatchSource, entryOf, tableOf } from "../../../runner/src/proposers/dispatch-source.js";
import {
  allClasses,
  classesOf,
  classOf,
  classRule,
  targetOf,
} from "../../../runner/src/proposers/shape-classes.js";
import { createShapeTuner } from "../../../runner/src/proposers/shape-tuner.js";
import { createLimit } from "../../../runner/src/util/limit.js";
import { repo, runCli } from "../../helpers/cli.js";
import { inCi } from "../../helpers/python.js";
import { context, evaluation, individual, timing } from "./helpers.js";
import { stepWithinConstraints } from "../../helpers/tunables.js";

// the first built-in softmax (one knob, BLOCK_SIZE): kernels/softmax is a template now
const softmax = readFileSync(
  join(repo, "test", "fixtures", "kernels", "softmax-block", "kernel.cu"),
  "utf8",
);
const softmaxTunables = { BLOCK_SIZE: [128, 256, 512, 1024] };
const configs = [
  { name: "8192x8192", dims: { M: 8192, N: 8192 }, shapes: [[8192, 8192]] },
  { name: "32768x1024", dims: { M: 32768, N: 1024 }, shapes: [[32768, 1024]] },
  { name: "odd-4097x5003", dims: { M: 4097, N: 5003 }, shapes: [[4097, 5003]] },
];

describe("configuration classes", () => {
  it("splits softmax's rows at the widest gap, and not its sizes (gap under ×4)", () => {
    const rule = classRule(configs);
    expect(rule).toEqual({ row: Math.floor(Math.sqrt(1024 * 5003)), size: null });
    const classes = classesOf(rule, configs);
    expect(classes.map((c) => [c.id, c.configs])).toEqual([
      ["short-rows", ["32768x1024"]],
      ["long-rows", ["8192x8192", "odd-4097x5003"]],
    ]);
    // held-out shapes fall in by the same thresholds
    expect(classOf(rule, [12289, 999]).id).toBe("short-rows");
    expect(classOf(rule, [777, 65537]).id).toBe("long-rows");
  });

  it("is one class when the shapes are alike, and at most four", () => {
    const alike = [
      { name: "a", shapes: [[4096, 4096]] },
      { name: "b", shapes: [[4000, 4099]] },
    ];
    expect(classRule(alike)).toEqual({ row: null, size: null });
    expect(classesOf(classRule(alike), alike).map((c) => c.id)).toEqual(["all"]);
    const spread = [
      { name: "tiny-short", shapes: [[16, 64]] },
      { name: "big-short", shapes: [[1 << 20, 64]] },
      { name: "big-long", shapes: [[1024, 65536]] },
    ];
    const rule = classRule(spread);
    expect(rule.row).not.toBeNull();
    expect(rule.size).not.toBeNull();
    expect(allClasses(rule)).toHaveLength(4);
    const kept = classesOf(rule, spread);
    expect(kept.map((c) => c.id)).toEqual([
      "short-rows-small",
      "short-rows-large",
      "long-rows-large",
    ]);
    // a call in the class no configuration has goes to the one with its row length
    const orphan = classOf(rule, [2, 65536]);
    expect(orphan.id).toBe("long-rows-small");
    expect(kept[targetOf(orphan, kept)]?.id).toBe("long-rows-large");
  });
});

/** Softmax's knobs, read back from a candidate: one set per class (a table) or one for all. */
function blockSizes(p: Pick<Proposal, "source" | "defines">): Record<string, number> {
  const table = tableOf(p.source);
  if (table === null) {
    const all = Number(p.defines["BLOCK_SIZE"] ?? 256);
    return { "short-rows": all, "long-rows": all };
  }
  return Object.fromEntries(
    table.classes.map((id, k) => [id, Number(table.values[k]?.["BLOCK_SIZE"] ?? 256)]),
  );
}

/**
 * A landscape where short rows run fastest at 128 threads and long rows at 512, and the
 * other knobs only cost: each configuration's time from its class's values.
 */
function evaluate(p: Proposal): Individual["evaluation"] {
  const sizes = blockSizes(p);
  const rule = classRule(configs);
  const timings = configs.map((config) => {
    const cls = classOf(rule, config.shapes[0] ?? []).id;
    const best = cls === "short-rows" ? 128 : 512;
    const block = sizes[cls] ?? 256;
    const ms = 1 + 0.3 * Math.abs(Math.log2(block / best));
    return timing(config.name, ms, 1.3);
  });
  const fitness = Math.exp(
    timings.reduce((sum, t) => sum + Math.log(t.baselineMs / t.medianMs), 0) / timings.length,
  );
  return { ...evaluation(fitness), timings };
}

function softmaxContext(best: Individual, seed: number): ProposalContext {
  const base = context(best, { seed });
  return { ...base, task: { ...base.task, visibleConfigs: configs } };
}

async function search(
  tuner: ReturnType<typeof createShapeTuner>,
  count: number,
  start = 0,
): Promise<Individual[]> {
  const seen: Individual[] = [];
  let best = individual("c0", softmax, 1, {
    evaluation: evaluate({ source: softmax, defines: {}, insight: "", name: "" }),
  });
  for (let i = start; i < start + count; i++) {
    const result = await tuner.propose(softmaxContext(best, i));
    if (!result.ok) break;
    const child = individual(`c${i + 1}`, result.proposal.source, null, {
      defines: result.proposal.defines,
      evaluation: evaluate(result.proposal),
    });
    tuner.observe(child);
    seen.push(child);
    if ((child.evaluation.fitness ?? 0) > (best.evaluation.fitness ?? 0)) best = child;
  }
  return seen;
}

const keyOf = (i: Pick<Individual, "source" | "defines">) =>
  JSON.stringify([i.source, Object.entries(i.defines).sort()]);

describe("shape-tuner", () => {
  it("finds each class its own block size, which one value for all cannot", async () => {
    for (const seed of [1, 2, 3]) {
      const tuner = createShapeTuner({ seed, baselineSource: softmax, tunables: softmaxTunables });
      const seen = await search(tuner, 24);
      const best = seen.reduce((a, b) =>
        (b.evaluation.fitness ?? 0) > (a.evaluation.fitness ?? 0) ? b : a,
      );
      expect(blockSizes(best), `seed ${seed}`).toEqual({ "short-rows": 128, "long-rows": 512 });
      // the best single value for every shape is slower than the table
      const uniform = Math.max(
        ...[128, 256, 512, 1024].map(
          (b) =>
            evaluate({ source: softmax, defines: { BLOCK_SIZE: String(b) }, insight: "", name: "" })
              .fitness ?? 0,
        ),
      );
      expect(best.evaluation.fitness ?? 0).toBeGreaterThan(uniform);
      expect(best.source).toContain("evk-shape-table:");
      expect(best.defines).toEqual({});
      expect(new Set(seen.map(keyOf)).size).toBe(seen.length);
    }
  });

  it("is the same under the same seed", async () => {
    const make = () =>
      createShapeTuner({ seed: 4, baselineSource: softmax, tunables: softmaxTunables });
    const a = await search(make(), 10);
    const b = await search(make(), 10);
    expect(a.map(keyOf)).toEqual(b.map(keyOf));
  });

  it("resumes: a new tuner told of an archive's candidates repeats none of them", async () => {
    const first = await search(
      createShapeTuner({ seed: 6, baselineSource: softmax, tunables: softmaxTunables }),
      12,
    );
    const resumed = createShapeTuner({
      seed: 6,
      baselineSource: softmax,
      tunables: softmaxTunables,
    });
    // as the engine does when it resumes: every archived candidate before the first proposal
    for (const old of first) resumed.observe(old);
    const next = await search(resumed, 12, 12);
    expect(next.length).toBe(12);
    const before = new Set(first.map(keyOf));
    expect(next.filter((i) => before.has(keyOf(i))).map((i) => i.id)).toEqual([]);
  });

  it("puts each class at the best values it has seen, at most every 8th proposal and in the last one", async () => {
    const assembled = (p: Pick<Individual, "insight">) =>
      p.insight.includes("each class at the best values it has seen");
    /** Per class, the block size of the fittest candidate on that class's configurations. */
    const bestPerClass = (pool: Individual[]) => {
      const rule = classRule(configs);
      const out: Record<string, number> = {};
      for (const cls of ["short-rows", "long-rows"]) {
        const names = configs
          .filter((c) => classOf(rule, c.shapes[0] ?? []).id === cls)
          .map((c) => c.name);
        const fitness = (i: Individual) =>
          Math.exp(
            i.evaluation.timings
              .filter((t) => names.includes(t.config))
              .reduce((sum, t) => sum + Math.log(t.baselineMs / t.medianMs), 0) / names.length,
          );
        const top = pool.reduce((a, b) => (fitness(b) > fitness(a) ? b : a));
        out[cls] = blockSizes(top)[cls] ?? 0;
      }
      return out;
    };
    for (const seed of [1, 2, 3]) {
      const tuner = createShapeTuner({ seed, baselineSource: softmax, tunables: softmaxTunables });
      const seen: Individual[] = [];
      let leader = individual("c0", softmax, 1, {
        evaluation: evaluate({ source: softmax, defines: {}, insight: "", name: "" }),
      });
      for (let i = 0; i < 24; i++) {
        const result = await tuner.propose(softmaxContext(leader, i));
        if (!result.ok) break;
        const child = individual(`c${i + 1}`, result.proposal.source, null, {
          defines: result.proposal.defines,
          insight: result.proposal.insight,
          evaluation: evaluate(result.proposal),
        });
        tuner.observe(child);
        seen.push(child);
        if ((child.evaluation.fitness ?? 0) > (leader.evaluation.fitness ?? 0)) leader = child;
      }
      const at = seen.flatMap((child, i) => (assembled(child) ? [i + 1] : []));
      expect(at.length, `seed ${seed}`).toBeGreaterThan(0);
      let previous = 0;
      for (const n of at) {
        // due 8 proposals after the last (or the start), then at the first whose combination is new
        expect(n - previous, `seed ${seed}: proposal ${n}`).toBeGreaterThanOrEqual(8);
        previous = n;
        const child = seen[n - 1];
        if (child === undefined) throw new Error("no such proposal");
        const base = individual("c0", softmax, 1, {
          evaluation: evaluate({ source: softmax, defines: {}, insight: "", name: "" }),
        });
        expect(blockSizes(child)).toEqual(bestPerClass([base, ...seen.slice(0, n - 1)]));
      }
      // the last proposal the budget allows: each class's best now, unless that was tried
      const last = await tuner.propose({ ...softmaxContext(seen[0] as Individual, 24), left: 0 });
      const tried = new Set(seen.map((child) => JSON.stringify(blockSizes(child))));
      const best = bestPerClass(seen);
      if (last.ok && !tried.has(JSON.stringify(best))) {
        expect(assembled(last.proposal)).toBe(true);
        expect(blockSizes(last.proposal)).toEqual(best);
      } else if (last.ok) {
        expect(assembled(last.proposal)).toBe(false);
      }
    }
  });

  it("runs through optimize (stand-in harness): the winner is built, verified and written", async () => {
    const dir = await mkdtemp(join(tmpdir(), "evokernel-shape-tuner-"));
    try {
      const harness = fileURLToPath(new URL("../../helpers/fake-gpu-harness.mjs", import.meta.url));
      const args = ["optimize", "softmax", "--proposer", "shape-tuner", "--seed", "2"];
      const run = await runCli(
        [...args, "--candidates", "6", "--archive", join(dir, "a.jsonl"), "--out", dir],
        {
          env: {
            ANTHROPIC_API_KEY: "",
            EVOKERNEL_PYTHON: harness,
            EVOKERNEL_SANDBOX: "off",
            EVOKERNEL_CACHE: dir,
          },
        },
      );
      const result = resultSchema.parse(
        JSON.parse(await readFile(join(dir, "result.json"), "utf8")),
      );
      expect(run.exitCode, run.stderr).toBe(result.win ? 0 : 1);
      expect(result.run.proposer).toBe("shape-tuner");
      expect(result.search.evaluated).toBe(6);
      const insights = (await readFile(join(dir, "a.jsonl"), "utf8"))
        .trim()
        .split("\n")
        .map(
          (line) => (JSON.parse(line) as { individual: { insight: string } }).individual.insight,
        );
      expect(
        insights.slice(1).every((i) => i.startsWith("Shape-keyed tuner (rows of at most 2263")),
      ).toBe(true);
      if (result.win && result.best !== null) {
        expect(await readFile(join(dir, "best.cu"), "utf8")).toBe(result.best.source);
        expect(result.best.defines).toEqual({});
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("refuses a kernel it cannot wrap, saying what to use", async () => {
    const ext = "#include <torch/extension.h>\n#define BLOCK 256\nPYBIND11_MODULE(m, n) {}\n";
    const tuner = createShapeTuner({ seed: 1, baselineSource: ext, tunables: {} });
    const result = await tuner.propose(softmaxContext(individual("c0", ext, 1), 0));
    expect(result).toMatchObject({ ok: false, final: true });
    expect(result.ok ? "" : result.message).toContain("--proposer tuner");
  });
});

// The dispatching source of every built-in evk kernel with tunables compiles: the baseline's
// values for short rows, every knob one step away for long rows.
function findNvcc(): string | null {
  const onPath = (process.env["PATH"] ?? "").split(delimiter).map((dir) => join(dir, "nvcc"));
  return [...onPath, "/usr/local/cuda/bin/nvcc"].find((file) => existsSync(file)) ?? null;
}

const nvcc = findNvcc();
const kernels = readdirSync(join(repo, "kernels")).sort();
const limit = createLimit(2);
const out = await mkdtemp(join(tmpdir(), "evokernel-shapes-"));
afterAll(() => rm(out, { recursive: true, force: true }));

describe.skipIf(nvcc === null && !inCi)("shape-keyed kernels compile (nvcc -cubin, sm_90)", () => {
  it.concurrent.each(kernels)(
    "%s",
    async (name) => {
      const task = JSON.parse(readFileSync(join(repo, "kernels", name, "task.json"), "utf8")) as {
        kernel: string;
        tunables?: Record<string, (string | number)[]>;
        constraints?: string[];
      };
      const source = readFileSync(join(repo, "kernels", name, task.kernel), "utf8");
      const tunables = detectTunables(source, task.tunables ?? {});
      if (entryOf(source) === null || tunables.length === 0) return;
      const moved = stepWithinConstraints(tunables, task.constraints);
      const rule = { row: 2048, size: null };
      const kept = classesOf(rule, [
        { name: "short", shapes: [[4096, 1024]] },
        { name: "long", shapes: [[1024, 8192]] },
      ]);
      const wrapped = dispatchSource({
        baseline: source,
        table: {
          rule,
          classes: kept.map((c) => c.id),
          values: [
            Object.fromEntries(tunables.map((t) => [t.id, t.current])),
            Object.fromEntries(tunables.map((t, i) => [t.id, moved[i] ?? null])),
          ],
        },
        kept,
        variants: [applyTunables(source, tunables, []), applyTunables(source, tunables, moved)],
        classVariant: [0, 1],
        labels: ["baseline", "moved"],
      });
      expect(tableOf(wrapped)?.classes).toEqual(["short-rows", "long-rows"]);
      const file = join(out, `${name}.cu`);
      await writeFile(file, wrapped);
      const args = ["-std=c++17", "-arch=sm_90", "-cubin", "-o", join(out, `${name}.cubin`)];
      const include = ["-I", join(repo, "runner", "harness", "include")];
      const compiled = await limit(() =>
        runProcess(nvcc ?? "nvcc", [...args, ...include, file], {
          env: childEnv(),
          timeoutMs: 600_000,
        }),
      );
      expect(compiled.exitCode === 0 ? 0 : compiled.output).toBe(0);
    },
    600_000,
  );
});
