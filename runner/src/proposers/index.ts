// The registry of proposers: a name on the command line → a Proposer. A new proposer is one
// new file in this folder and one line in REGISTRY.
import { EnvironmentError, UsageError } from "../errors.js";
import type { Proposer } from "../evolve/types.js";
import { createAnthropicClient } from "./anthropic-client.js";
import { createLlmProposer } from "./llm.js";
import { PRICES, priceFor } from "./pricing.js";
import { createShapeTuner } from "./shape-tuner.js";
import { createTuner } from "./tuner.js";

export type ProposerOptions = {
  seed: number;
  taskPath: string;
  baselineSource: string;
  /** The task's declared tunables (task.json "tunables"). */
  tunables: Record<string, (string | number)[]>;
  /** Rules the tunables' combinations keep (task.json "constraints"). */
  constraints?: string[];
  /** The kernel is CUDA source built by nvcc (not Python): the tuner may try nvcc flags. */
  compiled: boolean;
  /** The LLM's model id (llm only); DEFAULT_MODEL when absent. */
  model?: string;
  /** Where the API key comes from (llm only): pass process.env, or a copy. */
  env: NodeJS.ProcessEnv;
};

/** Claude Sonnet 5.5, the current Sonnet (platform.claude.com models overview, 2026-11). */
export const DEFAULT_MODEL = "claude-sonnet-5-5";

const REGISTRY = {
  tuner: (options: ProposerOptions) =>
    createTuner({
      seed: options.seed,
      baselineSource: options.baselineSource,
      tunables: options.tunables,
      ...(options.constraints === undefined ? {} : { constraints: options.constraints }),
      compileFlags: options.compiled,
    }),
  "shape-tuner": (options: ProposerOptions) =>
    createShapeTuner({
      seed: options.seed,
      baselineSource: options.baselineSource,
      tunables: options.tunables,
      ...(options.constraints === undefined ? {} : { constraints: options.constraints }),
    }),
  llm: createLlm,
} satisfies Record<string, (options: ProposerOptions) => Proposer>;

export const PROPOSERS = [
  "tuner",
  "shape-tuner",
  "llm",
] as const satisfies readonly (keyof typeof REGISTRY)[];

export type ProposerName = (typeof PROPOSERS)[number];

export function createProposer(name: string, options: ProposerOptions): Proposer {
  if (!isProposerName(name)) {
    throw new UsageError(`unknown proposer "${name}": use one of ${PROPOSERS.join(", ")}`);
  }
  return REGISTRY[name](options);
}

/** The LLM when a key is set, else the offline tuner. */
export function defaultProposer(env: NodeJS.ProcessEnv): ProposerName {
  return apiKeyOf(env) === null ? "tuner" : "llm";
}

function createLlm(options: ProposerOptions): Proposer {
  const apiKey = apiKeyOf(options.env);
  if (apiKey === null) {
    throw new EnvironmentError(
      "the llm proposer needs an Anthropic API key: set ANTHROPIC_API_KEY, or use --proposer tuner",
    );
  }
  const model = options.model ?? DEFAULT_MODEL;
  const price = priceFor(model);
  if (price === null) {
    // Refused rather than counted as free: a run must know what it spends.
    throw new UsageError(
      `no price is known for model "${model}", so its cost could not be counted: use one of ` +
        `${Object.keys(PRICES).join(", ")} (or add it to runner/src/proposers/pricing.ts)`,
    );
  }
  const baseURL = options.env["ANTHROPIC_BASE_URL"]?.trim();
  // Set by the local backend where the runner has no network but a socket to the API host.
  const proxySocket = options.env["EVOKERNEL_LLM_PROXY_SOCKET"]?.trim();
  const client = createAnthropicClient({
    apiKey,
    ...(baseURL ? { baseURL } : {}),
    ...(proxySocket ? { proxySocket } : {}),
  });
  return createLlmProposer({ client, model, price });
}

function apiKeyOf(env: NodeJS.ProcessEnv): string | null {
  const key = env["ANTHROPIC_API_KEY"]?.trim();
  return key === undefined || key === "" ? null : key;
}

function isProposerName(name: string): name is ProposerName {
  return (PROPOSERS as readonly string[]).includes(name);
}
