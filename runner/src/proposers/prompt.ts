// The LLM's prompt, after EvoEngineer: I1 the task context (reference, visible
// configurations, GPU, rules), I2 parent kernels with their runtimes (config "full"), I3
// insights from the population ("insight" and "full"), the current best kernel with its
// timings and profile, the last failed child's message, the technique catalogue and the
// operator. Pure: a ProposalContext in, the request's text out.
//
// What stays the same for a whole run (rules, formats, the reply format, the catalogue, the
// reference) goes in the system prompt as two blocks marked for prompt caching; what changes
// per proposal goes in the user message. A ProposalContext holds no held-out configuration
// and no text from a pull request, and nothing else is read here.
import type { EvoConfig, Individual, ProposalContext } from "../evolve/types.js";

export type SystemBlock = { type: "text"; text: string; cache_control: { type: "ephemeral" } };

export type Prompt = {
  system: SystemBlock[];
  user: string;
  /** The kernel SEARCH/REPLACE edits apply to. */
  editBase: Individual;
};

const MAX_MESSAGE = 4000;
const MAX_PROFILE = 3000;

export function buildPrompt(context: ProposalContext): Prompt {
  const editBase = context.operator === "new" ? context.best : (context.parents[0] ?? context.best);
  return {
    system: [cached(rulesBlock(context)), cached(taskBlock(context))],
    user: userMessage(context, editBase),
    editBase,
  };
}

function cached(text: string): SystemBlock {
  return { type: "text", text, cache_control: { type: "ephemeral" } };
}

function rulesBlock(context: ProposalContext): string {
  const backward = /\bevk_backward\b/.test(context.best.source);
  return [
    "You make one GPU kernel faster without changing what it computes. Every kernel you write",
    "is compiled, then verified against a PyTorch reference on several input configurations",
    "(odd sizes among them, and shapes you are not shown) with fresh random inputs on every",
    "trial, and only then timed against the baseline on the GPU named below. A kernel that",
    "fails verification counts for nothing, however fast.",
    "",
    "Rules. A kernel that breaks one is rejected:",
    `1. Keep the format and the entry point exactly as they are (${entryOf(context.task.format, backward)}): the same arguments, outputs, shapes and dtypes.`,
    "2. Keep the precision. No TF32, no half or bfloat16 arithmetic on fp32 data, no fast-math",
    "   and no approximate intrinsics (__expf, __fdividef, __sinf, …) in place of the accurate",
    "   functions; accumulate in fp32 (or wider) where the baseline does.",
    "3. Work for every shape: no sizes hard-coded from the configurations you see. Any size",
    "   must work, including sizes that divide by neither 32 nor 8, and unaligned tails.",
    "4. Launch all work on the stream you are given. Create no streams, threads or events, and",
    "   never synchronise the device.",
    "5. Cache nothing between calls: no results, pointers or input values kept from one call to",
    "   the next.",
    "6. No fallbacks: never call PyTorch or a library to compute the result (your own kernels do",
    "   the work), and never catch an error to take another path.",
    "7. Never modify an input; write every element of every output.",
    "",
    formatDoc(context.task.format, backward),
    "",
    "Reply in exactly this form, and write nothing after the code:",
    "Name: <a short kebab-case name for the kernel>",
    "Thought: <one paragraph: what you changed, and why it should be faster on this GPU>",
    "then either (a) the whole new kernel in one fenced code block, or (b) one or more edits",
    "against the parent kernel named in the request, each written as",
    "<<<<<<< SEARCH",
    "<lines copied exactly from the parent kernel>",
    "=======",
    "<the lines that replace them>",
    ">>>>>>> REPLACE",
    "Use (b) for local changes (each SEARCH text must occur in the parent exactly as written),",
    "and (a) for a rewrite or a crossover.",
  ].join("\n");
}

function entryOf(format: ProposalContext["task"]["format"], backward: boolean): string {
  const fn = backward ? "backward" : "forward";
  if (format === "evk") return `extern "C" int evk_${fn}(const EvkCall* call)`;
  if (format === "torch-ext") return `a PyTorch extension exporting ${fn} through PYBIND11_MODULE`;
  return `a Python file defining ${fn}(...) or class ModelNew`;
}

function formatDoc(format: ProposalContext["task"]["format"], backward: boolean): string {
  const fn = backward ? "backward" : "forward";
  if (format === "evk") {
    return [
      `Format "evk": one .cu file that includes <evokernel.h> and defines`,
      `  extern "C" int evk_${fn}(const EvkCall* call);`,
      "built with nvcc -O3 -std=c++17 -shared (no torch headers, no extra libraries). The harness",
      "allocates every output (already shaped, filled with NaN) and passes, from evokernel.h:",
      "  typedef struct EvkTensor { void* data; int64_t shape[8]; int64_t stride[8]; int32_t ndim;",
      "    int32_t dtype; } EvkTensor;  // strides in elements; dtype EVK_FLOAT32 0, EVK_FLOAT16 1,",
      "    // EVK_BFLOAT16 2, EVK_FLOAT64 3, EVK_INT32 4, EVK_INT64 5, EVK_BOOL 6",
      "  typedef struct EvkCall { const EvkTensor* inputs; int32_t n_inputs; EvkTensor* outputs;",
      "    int32_t n_outputs; const double* scalars; int32_t n_scalars; cudaStream_t stream; } EvkCall;",
      "  static inline int64_t evk_numel(const EvkTensor* t);",
      backward
        ? "Inputs are the gradients of the outputs, then the forward inputs; outputs are one gradient per input that requires it."
        : "Inputs and outputs come in the order of the reference's arguments and results.",
      "Return 0, or a non-zero code such as (int)cudaGetLastError() on failure. Launch every kernel",
      "on call->stream. Scratch memory: a static __device__ array, not an allocation per call.",
    ].join("\n");
  }
  if (format === "torch-ext") {
    return [
      `Format "torch-ext": one .cu PyTorch C++/CUDA extension that defines ${fn}(...) on`,
      "torch::Tensor arguments and exports it with",
      `  PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("${fn}", &${fn}); }`,
      "Allocate outputs with torch::empty (no torch compute ops) and launch your kernels on",
      "at::cuda::getCurrentCUDAStream().",
    ].join("\n");
  }
  return [
    `Format "py": one Python file defining ${fn}(*inputs) (or class ModelNew for a KernelBench`,
    "task). The kernel may be a Triton @triton.jit function or CUDA compiled with",
    "torch.utils.cpp_extension.load_inline; torch may allocate outputs but must not compute them.",
  ].join("\n");
}

function taskBlock(context: ProposalContext): string {
  const { task } = context;
  const lang = task.format === "py" ? "python" : "cuda";
  const configs = task.visibleConfigs.map(
    (c) =>
      `- ${c.name}: ${Object.entries(c.dims)
        .map(([k, v]) => `${k}=${v}`)
        .join(", ")}`,
  );
  const parts = [
    `Task: ${task.name}`,
    "",
    "The PyTorch reference (your kernel must compute exactly this):",
    fence("python", task.reference),
    "",
    "Configurations you are shown (verification uses others too):",
    ...configs,
    "",
    `GPU: ${task.gpu}. CUDA: ${task.cuda}. Kernel language: ${lang}.`,
  ];
  if (context.techniques.trim() !== "") {
    parts.push("", "Optimisation techniques to consider:", context.techniques.trim());
  }
  return parts.join("\n");
}

function userMessage(context: ProposalContext, editBase: Individual): string {
  const lang = context.task.format === "py" ? "python" : "cuda";
  const parts: string[] = [];
  const parents = context.operator === "new" ? [] : context.parents;
  const bestIsParent = parents.some((p) => p.id === context.best.id);
  if (!bestIsParent) {
    parts.push(
      `## The current best kernel (${context.best.id}${fitnessOf(context.best)})`,
      ...describe(context.best, lang, context.config),
    );
  }
  parents.forEach((parent, i) => {
    const label = `Parent ${String.fromCharCode(65 + i)}`;
    const best = parent.id === context.best.id ? ", the current best" : "";
    parts.push(
      `## ${label} (${parent.id}${fitnessOf(parent)}${best})`,
      ...describe(parent, lang, context.config),
    );
  });
  if (context.config !== "free" && context.insights.length > 0) {
    parts.push(
      "## Insights from earlier kernels (why they were written as they were)",
      ...context.insights.map((insight) => `- ${oneLine(insight)}`),
      "",
    );
  }
  if (context.lastFailure !== null) {
    const { reason, message } = context.lastFailure;
    parts.push(
      `## The last candidate failed: ${reason ?? "unknown reason"}`,
      "Do not repeat its mistake. Its compiler or verifier message:",
      fence("text", clip(message, MAX_MESSAGE)),
      "",
    );
  }
  parts.push("## What to do", operatorText(context, editBase));
  return parts.join("\n");
}

function describe(individual: Individual, lang: string, config: EvoConfig): string[] {
  const out: string[] = [];
  if (individual.insight.trim() !== "") out.push(`Its thought: ${oneLine(individual.insight)}`);
  const timings = individual.evaluation.timings;
  if (timings.length > 0) {
    out.push(
      "Timings in ms (median [p20–p80]), the baseline timed alongside:",
      "| configuration | this kernel | baseline | speedup |",
      "|---|---|---|---|",
      ...timings.map(
        (t) =>
          `| ${t.config} | ${ms(t.medianMs)} [${ms(t.p20Ms)}–${ms(t.p80Ms)}] | ` +
          `${ms(t.baselineMs)} [${ms(t.baselineP20Ms)}–${ms(t.baselineP80Ms)}] | ` +
          `${(t.baselineMs / t.medianMs).toFixed(2)}× |`,
      ),
    );
  }
  // EvoEngineer's "free" shows the task and the best kernel only; the profile comes with
  // "insight" and "full" (docs/OPTIMIZE.md, the three configurations).
  const profile = individual.evaluation.profile;
  if (config !== "free" && profile !== null && profile.trim() !== "") {
    out.push("Profile (top GPU kernels by time):", fence("text", clip(profile, MAX_PROFILE)));
  }
  const defines = Object.entries(individual.defines);
  if (defines.length > 0) {
    out.push(
      `It was compiled with ${defines.map(([k, v]) => `-D${k}=${v}`).join(" ")}; your kernel is ` +
        "compiled with no -D values, so write the values you want into the source.",
    );
  }
  out.push(fence(lang, individual.source), "");
  return out;
}

function operatorText(context: ProposalContext, editBase: Individual): string {
  const base =
    editBase.id === context.best.id && context.operator === "new"
      ? "the current best kernel"
      : `Parent A (${editBase.id})`;
  const edits = `SEARCH/REPLACE edits apply to ${base}.`;
  if (context.operator === "crossover") {
    return (
      "Crossover: write one kernel that combines the strengths of Parent A and Parent B, " +
      `and is faster than both. ${edits}`
    );
  }
  if (context.operator === "mutation") {
    return (
      "Mutation: take Parent A in a new direction (a technique it does not use yet, or a " +
      `different way to use the GPU), keeping what already works. ${edits}`
    );
  }
  const insights =
    context.config === "insight" && context.insights.length > 0
      ? " Use the insights above where they help."
      : "";
  return `Write a new kernel that is faster than the current best kernel.${insights} ${edits}`;
}

function fitnessOf(individual: Individual): string {
  const fitness = individual.evaluation.fitness;
  return fitness === null ? "" : `, ${fitness.toFixed(2)}× the baseline's speed`;
}

function fence(lang: string, body: string): string {
  const longest = Math.max(2, ...[...body.matchAll(/`+/g)].map((m) => m[0].length));
  const ticks = "`".repeat(longest + 1);
  return `${ticks}${lang}\n${body.replace(/\n$/, "")}\n${ticks}`;
}

function clip(text: string, max: number): string {
  return text.length > max
    ? `${text.slice(0, max)}\n… (${text.length - max} more characters)`
    : text;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

function ms(value: number): string {
  return value >= 1 ? value.toFixed(3) : value.toPrecision(3);
}
