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
  octokit.log.warn(
    `rate limit on ${options.method} ${options.url}: ${retryCount === 0 ? `retrying in ${retryAfter} s` : "giving up"}`,
  );
  return retryCount === 0 && retryAfter <= 3600;
};

/**
 * EVOKERNEL_THROTTLE=off drops the throttling plugin's pacing (one write a second, GitHub's
 * advice): only for a stand-in API, e.g. the webhook benchmark.
 */
export function evokernelOctokit(env: NodeJS.ProcessEnv = process.env): typeof ProbotOctokit {
  return ProbotOctokit.defaults({
    throttle: { enabled: env.EVOKERNEL_THROTTLE !== "off", onSecondaryRateLimit, onRateLimit },
    retry: { retries: 3, doNotRetry: [400, 401, 403, 404, 409, 410, 422, 451] },
  });
}
