// The LLM proposer: EvoEngineer's prompt (prompt.ts) to Anthropic's Messages API
// (anthropic-client.ts), the reply parsed into a kernel (parse-reply.ts), tokens and dollars
// counted (pricing.ts). An unusable reply, an API that stays overloaded after its retries,
// a timeout: each is a `{ ok: false }` record with a reason. Only what no later proposal can
// fix is thrown: a key the API refuses as an EnvironmentError (exit 3), a model it does not
// know as a UsageError.
import { z } from "zod";
import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
} from "@anthropic-ai/sdk";
import { EnvironmentError, UsageError } from "../errors.js";
import {
  ZERO_USAGE,
  type ProposalContext,
  type ProposalResult,
  type Proposer,
  type Usage,
} from "../evolve/types.js";
import type { LlmClient } from "./anthropic-client.js";
import { parseReply } from "./parse-reply.js";
import { costUsd, type Price } from "./pricing.js";
import { buildPrompt } from "./prompt.js";

export type LlmProposerOptions = {
  client: LlmClient;
  model: string;
  price: Price;
  /** Output tokens, thinking included. */
  maxTokens?: number;
};

export const LLM_DEFAULTS = { maxTokens: 32_000 } as const;

/** The parts of a Messages API reply that are read (validated: the reply is untrusted data). */
const messageSchema = z.object({
  content: z.array(z.looseObject({ type: z.string(), text: z.string().optional() })),
  stop_reason: z.string().nullable(),
  usage: z.looseObject({
    input_tokens: z.number(),
    output_tokens: z.number(),
    cache_creation_input_tokens: z.number().nullish(),
    cache_read_input_tokens: z.number().nullish(),
    cache_creation: z
      .looseObject({
        ephemeral_5m_input_tokens: z.number().nullish(),
        ephemeral_1h_input_tokens: z.number().nullish(),
      })
      .nullish(),
  }),
});

export function createLlmProposer(options: LlmProposerOptions): Proposer {
  const maxTokens = options.maxTokens ?? LLM_DEFAULTS.maxTokens;

  async function propose(context: ProposalContext, signal?: AbortSignal): Promise<ProposalResult> {
    const prompt = buildPrompt(context);
    let raw: unknown;
    try {
      raw = await options.client.createMessage(
        {
          model: options.model,
          max_tokens: maxTokens,
          system: prompt.system,
          messages: [{ role: "user", content: prompt.user }],
        },
        signal ? { signal } : {},
      );
    } catch (error) {
      return apiFailure(error, options.model, signal);
    }

    const parsed = messageSchema.safeParse(raw);
    if (!parsed.success) {
      return {
        ok: false,
        reason: "bad-response",
        message: `the API's reply is not a message: ${z.prettifyError(parsed.error)}`,
        usage: ZERO_USAGE,
      };
    }
    const message = parsed.data;
    const usage = usageOf(message.usage, options.price);
    // Thinking blocks (adaptive thinking) are the model's own; only text blocks are the reply.
    const text = message.content
      .filter((block) => block.type === "text")
      .map((block) => block.text ?? "")
      .join("\n");
    const reply = parseReply({ text, stopReason: message.stop_reason }, prompt.editBase.source);
    if (!reply.ok) return { ok: false, reason: reply.reason, message: reply.message, usage };

    const entry = missingEntry(reply.source, prompt.editBase.source);
    if (entry !== null) {
      return {
        ok: false,
        reason: "no-entry-point",
        message: `the kernel in the reply does not define ${entry}, as the format requires`,
        usage,
      };
    }
    return {
      ok: true,
      proposal: {
        name: reply.name,
        source: reply.source,
        defines: {},
        insight: reply.thought,
      },
      usage,
    };
  }

  return { name: "llm", propose };
}

function usageOf(usage: z.infer<typeof messageSchema>["usage"], price: Price): Usage {
  const cacheWrite = usage.cache_creation_input_tokens ?? 0;
  const write1h = usage.cache_creation?.ephemeral_1h_input_tokens ?? 0;
  const counts = {
    inputTokens: usage.input_tokens,
    outputTokens: usage.output_tokens,
    cacheReadTokens: usage.cache_read_input_tokens ?? 0,
    cacheWrite5mTokens: Math.max(0, cacheWrite - write1h),
    cacheWrite1hTokens: write1h,
  };
  return {
    inputTokens: counts.inputTokens,
    outputTokens: counts.outputTokens,
    cacheReadTokens: counts.cacheReadTokens,
    cacheWriteTokens: cacheWrite,
    usd: costUsd(price, counts),
  };
}

/** The entry point the parent defines and `source` lacks, or null. */
function missingEntry(source: string, parent: string): string | null {
  for (const entry of ["evk_backward", "evk_forward", "PYBIND11_MODULE"]) {
    if (parent.includes(entry)) return source.includes(entry) ? null : entry;
  }
  return null;
}

function apiFailure(error: unknown, model: string, signal?: AbortSignal): ProposalResult {
  const record = (reason: string, message: string): ProposalResult => ({
    ok: false,
    reason,
    message,
    usage: ZERO_USAGE,
  });
  if (error instanceof APIUserAbortError || signal?.aborted === true) {
    return record("aborted", "the request was cancelled");
  }
  if (error instanceof APIConnectionTimeoutError) {
    return record("api-timeout", "the Messages API did not answer in time, after every retry");
  }
  if (error instanceof APIConnectionError) {
    return record("api-unreachable", `the Messages API could not be reached: ${error.message}`);
  }
  if (error instanceof APIError) {
    const failed: FailedCall = error;
    const status = typeof failed.status === "number" ? failed.status : 0;
    const detail = errorDetail(failed, status);
    if (status === 401 || status === 403) {
      throw new EnvironmentError(
        `the Anthropic API refused the key (${detail}): set a valid ANTHROPIC_API_KEY, or use --proposer tuner`,
        { cause: error },
      );
    }
    if (status === 404) {
      throw new UsageError(
        `the Anthropic API does not know model ${model} (${detail}): pass another --model`,
        {
          cause: error,
        },
      );
    }
    if (status === 429)
      return record("api-rate-limited", `still rate-limited after every retry (${detail})`);
    if (status === 529)
      return record("api-overloaded", `still overloaded after every retry (${detail})`);
    if (status >= 500) return record("api-error", `the API failed after every retry (${detail})`);
    return record("api-rejected", `the API rejected the request (${detail})`);
  }
  throw error;
}

/** What an SDK APIError carries that is read here (its own fields are loosely typed). */
type FailedCall = { status?: unknown; error?: unknown; message: string; requestID?: unknown };

/** "HTTP 529 overloaded_error: Overloaded (request req_…)", from the API's error body. */
function errorDetail(failed: FailedCall, status: number): string {
  const body = z
    .object({ error: z.object({ type: z.string(), message: z.string() }) })
    .safeParse(failed.error);
  const what = body.success
    ? `${body.data.error.type}: ${body.data.error.message}`
    : failed.message;
  const id = typeof failed.requestID === "string" ? ` (request ${failed.requestID})` : "";
  return `HTTP ${status || "?"} ${what}${id}`;
}
