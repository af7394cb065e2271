// The app's Octokit class, composed once: Probot's (retry and throttling already plugged in)
// with our limits. Primary rate limits wait for the reset once; secondary limits (about 80
// content-creating requests a minute) wait GitHub's retry-after (60 s without one) up to
// three times, logged; other errors retry only when GitHub may answer differently next time.
// Every request has a time limit of our own (Node's default is 300 s): a hung connection is
// aborted, counted as a 5xx and retried like one.
import { ProbotOctokit } from "probot";

type LimitHandler = (
  retryAfter: number,
  options: { method: string; url: string },
  octokit: { log: { warn(msg: string): void } },
  retryCount: number,
) => boolean;

const onSecondaryRateLimit: LimitHandler = (retryAfter, options, octokit, retryCount) => {
  octokit.log.warn(
    `secondary rate limit on ${options.method} ${options.url}: retry ${retryCount + 1} of 3 in ${retryAfter} s`,
  );
  return retryCount < 3;
};

const onRateLimit: LimitHandler = (retryAfter, options, octokit, retryCount) => {
  const retry = retryCount === 0 && retryAfter <= 3600;
  octokit.log.warn(
    `rate limit on ${options.method} ${options.url}: ${retry ? `retrying in ${retryAfter} s` : "giving up"}`,
  );
  return retry;
};

export interface OctokitLimits {
  /**
   * The throttling plugin's pacing (one write a second per installation, GitHub's advice).
   * Off only against a stand-in API (the webhook benchmark) and in tests.
   */
  readonly throttle: boolean;
  readonly retry: boolean;
  /** Each request's time limit, body included (default 20 s). */
  readonly timeoutMs?: number;
}

export const REQUEST_TIMEOUT_MS = 20_000;

/** EVOKERNEL_THROTTLE=off turns the pacing off (a stand-in API only). */
export function limitsFromEnv(env: NodeJS.ProcessEnv): OctokitLimits {
  const seconds = Number(env.EVOKERNEL_GITHUB_TIMEOUT_S);
  return {
    throttle: env.EVOKERNEL_THROTTLE !== "off",
    retry: true,
    ...(Number.isFinite(seconds) && seconds > 0 ? { timeoutMs: seconds * 1000 } : {}),
  };
}

/**
 * A function, not an object, of defaults: Probot passes its own `throttle` options to every
 * client it builds (a handler that never retries secondary limits), and plain defaults would
 * lose to them. Ours are merged over Probot's, keeping its per-installation `id`.
 */
export function evokernelOctokit(limits: OctokitLimits): typeof ProbotOctokit {
  return ProbotOctokit.defaults((options: Record<string, unknown>) => {
    const throttle = typeof options.throttle === "object" ? options.throttle : {};
    const request: Record<string, unknown> =
      typeof options.request === "object" && options.request !== null
        ? (options.request as Record<string, unknown>)
        : {};
    return {
      ...options,
      request: {
        ...request,
        fetch: timedFetch(
          limits.timeoutMs ?? REQUEST_TIMEOUT_MS,
          typeof request.fetch === "function" ? (request.fetch as typeof fetch) : undefined,
        ),
      },
      throttle: { ...throttle, enabled: limits.throttle, onSecondaryRateLimit, onRateLimit },
      retry: limits.retry
        ? { retries: 3, doNotRetry: [400, 401, 403, 404, 409, 410, 422, 451] }
        : { enabled: false },
    };
  });
}

/**
 * fetch with a time limit per request: a fresh AbortSignal for every attempt (a retry gets
 * its own), unless the caller brought a signal of its own (an artifact's download).
 */
export function timedFetch(ms: number, inner?: typeof fetch): typeof fetch {
  // globalThis.fetch read at each call, not here: a test's interceptor replaces it later.
  return (input, init) =>
    (inner ?? globalThis.fetch)(input, {
      ...init,
      signal: init?.signal ?? AbortSignal.timeout(ms),
    });
}
