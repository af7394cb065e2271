// The app's Octokit class, composed once: Probot's (retry and throttling already plugged in)
// with our limits. Primary rate limits wait for the reset once; secondary limits (about 80
// content-creating requests a minute) wait GitHub's retry-after (60 s without one) up to
// three times, logged; other errors retry only when GitHub may answer differently next time.
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
}

/** EVOKERNEL_THROTTLE=off turns the pacing off (a stand-in API only). */
export function limitsFromEnv(env: NodeJS.ProcessEnv): OctokitLimits {
  return { throttle: env.EVOKERNEL_THROTTLE !== "off", retry: true };
}

/**
 * A function, not an object, of defaults: Probot passes its own `throttle` options to every
 * client it builds (a handler that never retries secondary limits), and plain defaults would
 * lose to them. Ours are merged over Probot's, keeping its per-installation `id`.
 */
export function evokernelOctokit(limits: OctokitLimits): typeof ProbotOctokit {
  return ProbotOctokit.defaults((options: Record<string, unknown>) => {
    const throttle = typeof options.throttle === "object" ? options.throttle : {};
    return {
      ...options,
      throttle: { ...throttle, enabled: limits.throttle, onSecondaryRateLimit, onRateLimit },
      retry: limits.retry
        ? { retries: 3, doNotRetry: [400, 401, 403, 404, 409, 410, 422, 451] }
        : { enabled: false },
    };
  });
}
