// The prompt is read by a model and, when a run goes wrong, by a person: snapshot it, and
// check what EvoEngineer's configurations put in or leave out.
import { describe, expect, it } from "vitest";
import { buildPrompt } from "../../../runner/src/proposers/prompt.js";
import { context, individual, timing } from "./helpers.js";

const kernel =
  '#include <evokernel.h>\nextern "C" int evk_forward(const EvkCall* call) { return 0; }\n';

function best() {
  const b = individual("c4", kernel, 1.25, { insight: "float4 loads; one warp per row" });
  b.evaluation.timings = [timing("8192x8192", 0.5, 0.625), timing("odd-4097x5003", 0.16, 0.2)];
  b.evaluation.profile = "softmax_rows  97.0%  0.49 ms";
  return b;
}

describe("buildPrompt", () => {
  it("free: task context and the best kernel, no insights or profile, edits against the best", () => {
    const prompt = buildPrompt(context(best(), { insights: ["ignored in free"] }));
    expect(prompt.editBase.id).toBe("c4");
    expect(prompt.user).not.toContain("ignored in free");
    expect(prompt.user).toContain(
      "| 8192x8192 | 0.500 [0.490–0.510] | 0.625 [0.613–0.637] | 1.25× |",
    );
    expect(prompt.user).not.toContain("softmax_rows  97.0%");
    expect(prompt.user).not.toContain("Profile");
    expect(prompt.system).toMatchSnapshot("system");
    expect(prompt.user).toMatchSnapshot("user");
  });

  it("insight: adds the sampled insights", () => {
    const prompt = buildPrompt(
      context(best(), { config: "insight", insights: ["shared memory tiles cut L2 traffic"] }),
    );
    expect(prompt.user).toContain("- shared memory tiles cut L2 traffic");
    expect(prompt.user).toContain(
      "Profile (top GPU kernels by time):\n```text\nsoftmax_rows  97.0%",
    );
    expect(prompt.user).toContain("Use the insights above where they help.");
  });

  it("full crossover: both parents with runtimes, edits against parent A", () => {
    const a = individual("c7", kernel.replace("return 0", "return 1"), 1.1);
    const b = individual("c9", kernel.replace("return 0", "return 2"), 1.05);
    const prompt = buildPrompt(
      context(best(), {
        config: "full",
        operator: "crossover",
        parents: [a, b],
        insights: ["i1"],
        lastFailure: {
          source: "",
          reason: "mismatch",
          message: "mismatch at [3, 7]: got 0.5, expected 0.25",
        },
      }),
    );
    expect(prompt.editBase.id).toBe("c7");
    expect(prompt.user).toContain("## Parent A (c7, 1.10× the baseline's speed)");
    expect(prompt.user).toContain("## Parent B (c9, 1.05× the baseline's speed)");
    expect(prompt.user).toContain("## The last candidate failed: mismatch");
    expect(prompt.user).toContain("SEARCH/REPLACE edits apply to Parent A (c7).");
    expect(prompt.user).toMatchSnapshot("user");
  });

  it("names the -D values of a tuned parent, which the LLM must write into the source", () => {
    const tuned = individual("c2", kernel, 1.1, { defines: { BLOCK_SIZE: "512" } });
    const prompt = buildPrompt(
      context(best(), { config: "full", operator: "mutation", parents: [tuned] }),
    );
    expect(prompt.user).toContain("compiled with -DBLOCK_SIZE=512");
  });

  it("states the rules EvoEngineer's I1 carries", () => {
    const system = buildPrompt(context(best()))
      .system.map((b) => b.text)
      .join("\n");
    for (const rule of [
      'extern "C" int evk_forward(const EvkCall* call)',
      "Keep the precision",
      "No TF32",
      "Create no streams, threads or events",
      "Cache nothing between calls",
      "No fallbacks",
      "GPU: NVIDIA H100 80GB HBM3. CUDA: 13.0.",
      "Memory: coalescing",
    ]) {
      expect(system).toContain(rule);
    }
  });

  it("fences code that itself holds backticks with a longer fence", () => {
    const b = individual("c1", "// ```not a fence```\nint x;\n", 1);
    expect(buildPrompt(context(b)).user).toContain("````cuda\n// ```not a fence```\nint x;\n````");
  });
});
