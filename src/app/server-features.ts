// What the GitHub server the app talks to accepts, where github.com and GitHub Enterprise
// Server differ. `return_run_details` on a workflow dispatch (github.com since 2026-02-19)
// is not in GHES 3.17-3.19's API description, and GHES refuses keys it does not know (422:
// no job would ever start). github.com and GHE.com (data residency) get it; a server whose
// `GET /meta` names an `installed_version` is GHES and does not, and the run is found by
// listing the workflow's runs instead (github.ts findDispatchedRun). Asked once per server.

const cache = new Map<string, Promise<boolean>>();

/** Whether a dispatch to the server at `baseUrl` (its REST API root) may send the key. */
export function acceptsRunDetails(baseUrl: string, meta: () => Promise<unknown>): Promise<boolean> {
  let host: string;
  try {
    host = new URL(baseUrl).hostname;
  } catch {
    return Promise.resolve(false);
  }
  if (host === "api.github.com" || host.endsWith(".ghe.com")) return Promise.resolve(true);
  let known = cache.get(baseUrl);
  if (known === undefined) {
    known = meta().then(
      (data) => ghesVersion(data) === undefined,
      // Unknown: not sending the key is the choice that works everywhere (the run is then
      // found by listing); asked again next time.
      () => {
        cache.delete(baseUrl);
        return false;
      },
    );
    cache.set(baseUrl, known);
  }
  return known;
}

/** GHES's `installed_version` from `GET /meta` (github.com has none). */
export function ghesVersion(meta: unknown): string | undefined {
  if (typeof meta !== "object" || meta === null || !("installed_version" in meta)) return undefined;
  const version = meta.installed_version;
  return typeof version === "string" && version !== "" ? version : undefined;
}

/** Tests: forget what was learnt about each server. */
export function forgetServerFeatures(): void {
  cache.clear();
}
