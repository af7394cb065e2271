// The one place where the LLM side effect enters: a client for Anthropic's Messages API,
// made from an API key the caller read from the environment. Nothing else in evokernel
// talks to an LLM; tests point this client at a local HTTP mock.
//
// - The key goes in the x-api-key header only, and the SDK is kept from looking for other
//   credentials (profiles on disk, tokens in the environment).
// - The SDK retries 408, 409, 429 and 5xx (529 overloaded included) with exponential
//   backoff, honouring the server's retry-after; `maxRetryWaitMs` caps how long one such
//   wait may be (a test sets it to a few milliseconds).
// - Each attempt has a timeout; an AbortSignal ends a request at once.
// - Where the local backend gives the runner no network, every request goes through the
//   job's egress proxy, a Unix socket (`proxySocket`: EVOKERNEL_LLM_PROXY_SOCKET) that
//   reaches the API host alone (proxy-fetch.ts).
import Anthropic from "@anthropic-ai/sdk";
import type {
  Message,
  MessageCreateParamsNonStreaming,
} from "@anthropic-ai/sdk/resources/messages";
import { fetchThroughProxy } from "./proxy-fetch.js";

export type AnthropicClientOptions = {
  apiKey: string;
  /** Defaults to https://api.anthropic.com. */
  baseURL?: string;
  /** Retries after the first attempt (429, 529, 5xx, timeouts, lost connections). */
  maxRetries?: number;
  /** Per attempt. */
  timeoutMs?: number;
  /** The longest wait before a retry, whatever the server's retry-after asks. */
  maxRetryWaitMs?: number;
  /** The job's egress proxy (EVOKERNEL_LLM_PROXY_SOCKET): every request goes through it. */
  proxySocket?: string;
};

export type CreateMessage = (
  params: MessageCreateParamsNonStreaming,
  options?: { signal?: AbortSignal },
) => Promise<Message>;

export type LlmClient = { createMessage: CreateMessage };

export const CLIENT_DEFAULTS = {
  baseURL: "https://api.anthropic.com",
  maxRetries: 4,
  timeoutMs: 10 * 60_000,
  maxRetryWaitMs: 60_000,
} as const;

/** The SDK's client, with the API key as x-api-key and no other credential source. */
class KeyOnlyAnthropic extends Anthropic {
  // The SDK's hook for subclasses that bring their own authentication: never resolve
  // credentials from profiles on disk or workload-identity variables.
  protected override _shouldResolveDefaultCredentials(): boolean {
    return false;
  }
}

export function createAnthropicClient(options: AnthropicClientOptions): LlmClient {
  const maxRetryWaitMs = options.maxRetryWaitMs ?? CLIENT_DEFAULTS.maxRetryWaitMs;
  const client = new KeyOnlyAnthropic({
    apiKey: null,
    authToken: null,
    baseURL: options.baseURL ?? CLIENT_DEFAULTS.baseURL,
    defaultHeaders: { "x-api-key": options.apiKey },
    maxRetries: options.maxRetries ?? CLIENT_DEFAULTS.maxRetries,
    timeout: options.timeoutMs ?? CLIENT_DEFAULTS.timeoutMs,
    fetch: capRetryAfter(
      maxRetryWaitMs,
      options.proxySocket === undefined
        ? (input, init) => globalThis.fetch(input, init)
        : fetchThroughProxy(options.proxySocket),
    ),
    logLevel: "off",
  });
  return {
    createMessage: (params, requestOptions = {}) =>
      client.messages.create(
        params,
        requestOptions.signal ? { signal: requestOptions.signal } : {},
      ),
  };
}

/**
 * fetch, with the wait a 429 or 5xx response asks for (retry-after) capped at `maxWaitMs`.
 * The SDK reads `retry-after-ms` before `retry-after`, so the cap is written there.
 */
function capRetryAfter(maxWaitMs: number, fetch: typeof globalThis.fetch): typeof globalThis.fetch {
  return async function fetchWithCap(input, init) {
    const response = await fetch(input, init);
    if (response.status !== 429 && response.status < 500) return response;
    const header = response.headers.get("retry-after-ms") ?? response.headers.get("retry-after");
    if (header === null) return response;
    const asked = response.headers.has("retry-after-ms")
      ? Number(header)
      : Number.isFinite(Number(header))
        ? Number(header) * 1000
        : Date.parse(header) - Date.now();
    if (!(asked > maxWaitMs)) return response;
    const headers = new Headers(response.headers);
    headers.set("retry-after-ms", String(maxWaitMs));
    return new Response(response.body, {
      status: response.status,
      statusText: response.statusText,
      headers,
    });
  };
}
