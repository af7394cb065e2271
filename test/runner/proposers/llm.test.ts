// The LLM proposer against a strict HTTP mock of Anthropic's Messages API (nock): real
// response and error shapes, no network, every mock used and no request unmocked. Retries
// run through the SDK's own retry path, with the retry-after wait capped at a few ms.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import nock from "nock";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { EnvironmentError, UsageError } from "../../../runner/src/errors.js";
import type { ProposalContext, ProposalResult } from "../../../runner/src/evolve/types.js";
import { createAnthropicClient } from "../../../runner/src/proposers/anthropic-client.js";
import {
  createProposer,
  DEFAULT_MODEL,
  defaultProposer,
  PROPOSERS,
  type ProposerOptions,
} from "../../../runner/src/proposers/index.js";
import { createLlmProposer } from "../../../runner/src/proposers/llm.js";
import { priceFor } from "../../../runner/src/proposers/pricing.js";
import { repo } from "../../helpers/cli.js";
import { context, individual, timing } from "./helpers.js";

const API = "https://api.anthropic.com";
const KEY = "sk-ant-api03-test-key-0123456789abcdef";
const MODEL = "claude-sonnet-5-5";
const softmaxDir = join(repo, "kernels", "softmax");
// the first built-in softmax (one knob, BLOCK_SIZE): kernels/softmax is a template now
const softmax = readFileSync(
  join(repo, "test", "fixtures", "kernels", "softmax-block", "kernel.cu"),
  "utf8",
);
const heldout = (
  JSON.parse(readFileSync(join(softmaxDir, "task.json"), "utf8")) as { heldout: { name: string }[] }
).heldout.map((c) => c.name);

const unmatched: string[] = [];
const onNoMatch = (req: Request) => unmatched.push(`${req.method} ${req.url}`);

beforeAll(() => {
  nock.disableNetConnect();
  nock.emitter.on("no match", onNoMatch);
});

afterEach(() => {
  const pending = nock.pendingMocks();
  const stray = unmatched.splice(0);
  nock.cleanAll();
  expect(pending, "mocks left unused").toEqual([]);
  expect(stray, "requests no mock matched").toEqual([]);
});

afterAll(() => {
  nock.emitter.off("no match", onNoMatch);
  nock.enableNetConnect();
});

function message(text: string, extra: Record<string, unknown> = {}) {
  return {
    id: "msg_01XFDUDYJgAACzvnptvVoYEL",
    type: "message",
    role: "assistant",
    content: [{ type: "text", text }],
    model: MODEL,
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: {
      input_tokens: 1200,
      output_tokens: 800,
      cache_creation_input_tokens: 3000,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 3000, ephemeral_1h_input_tokens: 0 },
      service_tier: "standard",
    },
    ...extra,
  };
}

const okHeaders = { "content-type": "application/json", "request-id": "req_011CVok" };

function apiError(type: "rate_limit_error" | "overloaded_error", text: string) {
  return { type: "error", error: { type, message: text }, request_id: "req_011CVerr" };
}

const rateLimited = apiError(
  "rate_limit_error",
  "This request would exceed the rate limit for your organization of 80,000 output tokens per minute.",
);
const overloaded = apiError("overloaded_error", "Overloaded");
const errorHeaders = {
  "content-type": "application/json",
  "request-id": "req_011CVerr",
  "retry-after": "2",
  "x-should-retry": "true",
};

/** The Messages endpoint, answering once with `status` and `body`; requests land in `seen`. */
function mockMessages(
  status: number,
  body: object,
  headers: Record<string, string>,
  seen: { body: unknown; headers: Record<string, string | string[]> }[] = [],
) {
  return nock(API, { reqheaders: { "x-api-key": KEY }, badheaders: ["authorization"] })
    .post("/v1/messages", (requestBody: unknown) => {
      seen.push({ body: requestBody, headers: {} });
      return true;
    })
    .reply(
      status,
      function reply() {
        const last = seen.at(-1);
        if (last) last.headers = this.req.headers;
        return body;
      },
      headers,
    );
}

function proposer(maxRetries = 2) {
  const price = priceFor(MODEL);
  if (price === null) throw new Error(`no price for ${MODEL}`);
  const client = createAnthropicClient({ apiKey: KEY, maxRetries, maxRetryWaitMs: 5 });
  return createLlmProposer({ client, model: MODEL, price });
}

function softmaxContext(extra: Partial<ProposalContext> = {}): ProposalContext {
  const best = individual("c3", softmax, 1.08, {
    insight: "one block per row with an online max and sum",
  });
  best.evaluation.timings = [timing("8192x8192", 0.61, 0.66), timing("odd-4097x5003", 0.2, 0.21)];
  best.evaluation.profile = "softmax_rows  98.1%  0.60 ms";
  return context(best, extra);
}

const fencedReply = [
  "Name: Warp per row softmax",
  "Thought: Rows of 8192 floats fit one warp's registers after float4 loads, so each warp",
  "owns a row and no shared memory or __syncthreads is needed.",
  "",
  "```cuda",
  '#include <evokernel.h>\nextern "C" int evk_forward(const EvkCall* call) { return 0; }',
  "```",
].join("\n");

function expectProposal(result: ProposalResult) {
  if (!result.ok) throw new Error(`expected a proposal, got ${result.reason}: ${result.message}`);
  return result.proposal;
}

describe("llm proposer", () => {
  it("turns a fenced reply into a proposal and counts tokens and dollars", async () => {
    mockMessages(200, message(fencedReply), okHeaders);
    const result = await proposer().propose(softmaxContext());
    const proposal = expectProposal(result);
    expect(proposal.name).toBe("warp-per-row-softmax");
    expect(proposal.insight).toMatch(/^Rows of 8192 floats fit one warp's registers/);
    expect(proposal.source).toBe(
      '#include <evokernel.h>\nextern "C" int evk_forward(const EvkCall* call) { return 0; }\n',
    );
    expect(proposal.defines).toEqual({});
    expect(result.usage).toEqual({
      inputTokens: 1200,
      outputTokens: 800,
      cacheReadTokens: 0,
      cacheWriteTokens: 3000,
      usd: (1200 * 2 + 800 * 10 + 3000 * 2.5) / 1e6,
    });
  });

  it("applies SEARCH/REPLACE edits to the parent kernel", async () => {
    const reply = [
      "Name: bigger-blocks",
      "Thought: 512 threads halve the rows' loop trips.",
      "<<<<<<< SEARCH",
      "#ifndef BLOCK_SIZE",
      "#define BLOCK_SIZE 256",
      "=======",
      "#ifndef BLOCK_SIZE",
      "#define BLOCK_SIZE 512",
      ">>>>>>> REPLACE",
      "<<<<<<< SEARCH",
      "  for (int64_t j = threadIdx.x; j < N; j += BLOCK_SIZE) yr[j] = expf(xr[j] - m) / s;",
      "=======",
      "  const float inv = 1.f / s;",
      "  for (int64_t j = threadIdx.x; j < N; j += BLOCK_SIZE) yr[j] = expf(xr[j] - m) * inv;",
      ">>>>>>> REPLACE",
    ].join("\n");
    mockMessages(
      200,
      message(reply, {
        usage: {
          input_tokens: 50,
          output_tokens: 90,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 3000,
        },
      }),
      okHeaders,
    );
    const result = await proposer().propose(softmaxContext());
    const proposal = expectProposal(result);
    expect(proposal.source).toContain("#define BLOCK_SIZE 512");
    expect(proposal.source).toContain("expf(xr[j] - m) * inv;");
    expect(proposal.source).not.toContain("#define BLOCK_SIZE 256");
    expect(proposal.source.split("\n")).toHaveLength(softmax.split("\n").length + 1);
    expect(result.usage).toMatchObject({ cacheReadTokens: 3000, cacheWriteTokens: 0 });
    expect(result.usage.usd).toBeCloseTo((50 * 2 + 90 * 10 + 3000 * 0.1) / 1e6, 12);
  });

  it("applies edits to parent A, not the best, for a mutation", async () => {
    const kernel =
      '#define TILE 16\nextern "C" int evk_forward(const EvkCall* call) { return 0; }\n';
    const parent = individual("c5", kernel, 0.9);
    const reply =
      "Name: t\nThought: x\n<<<<<<< SEARCH\n#define TILE 16\n=======\n#define TILE 32\n>>>>>>> REPLACE\n";
    mockMessages(200, message(reply), okHeaders);
    const result = await proposer().propose(
      softmaxContext({ config: "full", operator: "mutation", parents: [parent] }),
    );
    expect(expectProposal(result).source).toBe(kernel.replace("TILE 16", "TILE 32"));
  });

  it("retries a 429 (rate_limit_error) and then succeeds", async () => {
    const seen: { body: unknown; headers: Record<string, string | string[]> }[] = [];
    mockMessages(429, rateLimited, errorHeaders, seen);
    mockMessages(200, message(fencedReply), okHeaders, seen);
    const result = await proposer().propose(softmaxContext());
    expect(result.ok).toBe(true);
    expect(seen).toHaveLength(2);
    expect(seen.map((s) => s.headers["x-stainless-retry-count"])).toEqual(["0", "1"]);
    expect(seen[1]?.body).toEqual(seen[0]?.body);
  });

  it("retries a 529 (overloaded_error) and then succeeds", async () => {
    mockMessages(529, overloaded, errorHeaders);
    mockMessages(200, message(fencedReply), okHeaders);
    expect((await proposer().propose(softmaxContext())).ok).toBe(true);
  });

  it("gives a record, not an exception, when 529s outlast the retries", async () => {
    for (let i = 0; i < 3; i++) mockMessages(529, overloaded, errorHeaders);
    const result = await proposer(2).propose(softmaxContext());
    expect(result).toMatchObject({ ok: false, reason: "api-overloaded" });
    if (!result.ok) expect(result.message).toMatch(/HTTP 529 overloaded_error: Overloaded/);
    expect(result.usage.usd).toBe(0);
  });

  it("gives a record when 429s outlast the retries", async () => {
    mockMessages(429, rateLimited, errorHeaders);
    const result = await proposer(0).propose(softmaxContext());
    expect(result).toMatchObject({ ok: false, reason: "api-rate-limited" });
  });

  it("refuses a truncated reply (stop_reason max_tokens), but counts its tokens", async () => {
    const cut = 'Name: x\nThought: y\n```cuda\n#include <evokernel.h>\nextern "C" int evk_forward(';
    mockMessages(200, message(cut, { stop_reason: "max_tokens" }), okHeaders);
    const result = await proposer().propose(softmaxContext());
    expect(result).toMatchObject({ ok: false, reason: "truncated" });
    expect(result.usage.outputTokens).toBe(800);
    expect(result.usage.usd).toBeGreaterThan(0);
  });

  it("refuses a reply with no code", async () => {
    mockMessages(
      200,
      message("Name: idea\nThought: use float4 loads. I would write it next time."),
      okHeaders,
    );
    const result = await proposer().propose(softmaxContext());
    expect(result).toMatchObject({ ok: false, reason: "no-code" });
  });

  it("refuses an empty reply, and one that only thought", async () => {
    mockMessages(200, message("", { content: [] }), okHeaders);
    mockMessages(
      200,
      message("", { content: [{ type: "thinking", thinking: "", signature: "EuYBCkQYAiJA" }] }),
      okHeaders,
    );
    const p = proposer();
    expect(await p.propose(softmaxContext())).toMatchObject({ ok: false, reason: "empty-reply" });
    expect(await p.propose(softmaxContext())).toMatchObject({ ok: false, reason: "empty-reply" });
  });

  it("refuses an edit whose SEARCH text is not in the parent", async () => {
    const reply =
      "Name: x\nThought: y\n<<<<<<< SEARCH\n#define WARPS 4\n=======\n#define WARPS 8\n>>>>>>> REPLACE\n";
    mockMessages(200, message(reply), okHeaders);
    const result = await proposer().propose(softmaxContext());
    expect(result).toMatchObject({ ok: false, reason: "edit-not-found" });
    if (!result.ok) expect(result.message).toContain('"#define WARPS 4"');
  });

  it("refuses a kernel without the format's entry point", async () => {
    mockMessages(
      200,
      message("Name: x\nThought: y\n```cuda\n__global__ void k() {}\n```"),
      okHeaders,
    );
    const result = await proposer().propose(softmaxContext());
    expect(result).toMatchObject({ ok: false, reason: "no-entry-point" });
  });

  it("reads only text blocks, after the model's thinking", async () => {
    const content = [
      { type: "thinking", thinking: "Let me think about occupancy…", signature: "EuYBCkQYAiJA" },
      { type: "text", text: fencedReply },
    ];
    mockMessages(200, message("", { content }), okHeaders);
    expect(expectProposal(await proposer().propose(softmaxContext())).name).toBe(
      "warp-per-row-softmax",
    );
  });

  it("sends cached system blocks, no held-out configuration, and the key only as x-api-key", async () => {
    const seen: { body: unknown; headers: Record<string, string | string[]> }[] = [];
    mockMessages(200, message(fencedReply), okHeaders, seen);
    const options: ProposerOptions = {
      seed: 1,
      taskPath: softmaxDir,
      compiled: true,
      baselineSource: softmax,
      tunables: { BLOCK_SIZE: [128, 256, 512, 1024] },
      env: { ANTHROPIC_API_KEY: KEY },
    };
    const llm = createProposer("llm", options);
    const ctx = softmaxContext({
      config: "full",
      operator: "crossover",
      parents: [individual("c1", softmax, 1.02), individual("c2", softmax, 1.01)],
      insights: ["float4 loads need 16-byte aligned rows"],
      lastFailure: {
        source: "x",
        reason: "compile-error",
        message: 'error: identifier "blockDim2" is undefined',
      },
    });
    expect((await llm.propose(ctx)).ok).toBe(true);

    expect(seen).toHaveLength(1);
    const body = seen[0]?.body as {
      model: string;
      max_tokens: number;
      system: { type: string; text: string; cache_control?: { type: string } }[];
      messages: { role: string; content: string }[];
    };
    expect(body.model).toBe(DEFAULT_MODEL);
    expect(body.system.length).toBeGreaterThanOrEqual(2);
    for (const block of body.system) {
      expect(block.type).toBe("text");
      expect(block.cache_control).toEqual({ type: "ephemeral" });
    }
    const system = body.system.map((b) => b.text).join("\n");
    expect(system).toContain(ctx.task.reference.trim());
    expect(system).toContain("odd-4097x5003");
    expect(system).toContain("<<<<<<< SEARCH");
    expect(body).not.toHaveProperty("temperature"); // Sonnet 5 and later refuse non-default sampling
    const user = body.messages[0]?.content ?? "";
    expect(user).toContain("Parent B (c2");
    expect(user).toContain("float4 loads need 16-byte aligned rows");
    expect(user).toContain('identifier "blockDim2" is undefined');
    expect(user).toContain("Crossover");

    const sent = JSON.stringify(body);
    expect(heldout.length).toBeGreaterThan(0);
    for (const name of heldout) expect(sent).not.toContain(name);
    expect(sent).not.toContain(KEY);
    const headers = seen[0]?.headers ?? {};
    expect(headers["x-api-key"]).toBe(KEY);
    expect(headers["authorization"]).toBeUndefined();
    const elsewhere = Object.entries(headers).filter(
      ([name, value]) => name !== "x-api-key" && String(value).includes(KEY),
    );
    expect(elsewhere).toEqual([]);
  });

  it("stops on a key the API refuses (401), without retrying", async () => {
    mockMessages(
      401,
      { type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } },
      { "content-type": "application/json" },
    );
    // A setting of this machine, not of the command line: exit 3.
    await expect(proposer().propose(softmaxContext())).rejects.toThrow(EnvironmentError);
  });

  it("gives up at once when the caller aborts", async () => {
    const controller = new AbortController();
    controller.abort();
    const result = await proposer().propose(softmaxContext(), controller.signal);
    expect(result).toMatchObject({ ok: false, reason: "aborted" });
  });
});

describe("proposer registry", () => {
  const base: ProposerOptions = {
    seed: 1,
    taskPath: softmaxDir,
    compiled: true,
    baselineSource: softmax,
    tunables: {},
    env: {},
  };

  it("knows the tuner, the shape-keyed tuner and the llm", () => {
    expect(PROPOSERS).toEqual(["tuner", "shape-tuner", "llm"]);
    expect(createProposer("tuner", base).name).toBe("tuner");
    expect(createProposer("shape-tuner", base).name).toBe("shape-tuner");
    expect(createProposer("llm", { ...base, env: { ANTHROPIC_API_KEY: KEY } }).name).toBe("llm");
  });

  it("refuses an unknown name, listing the known ones", () => {
    expect(() => createProposer("oracle", base)).toThrow(UsageError);
    expect(() => createProposer("oracle", base)).toThrow(/tuner, shape-tuner, llm/);
  });

  it("refuses the llm without an API key, pointing at the tuner", () => {
    expect(() => createProposer("llm", base)).toThrow(
      /set ANTHROPIC_API_KEY, or use --proposer tuner/,
    );
    expect(() => createProposer("llm", { ...base, env: { ANTHROPIC_API_KEY: "  " } })).toThrow(
      EnvironmentError,
    );
  });

  it("refuses a model it cannot price", () => {
    const options = { ...base, env: { ANTHROPIC_API_KEY: KEY }, model: "claude-unknown-9" };
    expect(() => createProposer("llm", options)).toThrow(
      /no price is known for model "claude-unknown-9"/,
    );
  });

  it("defaults to the llm with a key, else the tuner", () => {
    expect(defaultProposer({ ANTHROPIC_API_KEY: KEY })).toBe("llm");
    expect(defaultProposer({})).toBe("tuner");
  });
});
