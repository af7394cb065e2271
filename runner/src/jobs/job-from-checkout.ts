// `evokernel review` as a job: the two commits a pull request would compare (head, and
// the merge base with the default branch, as GitHub diffs a pull request), and the
// repository's `.github/evokernel.yml` as the default branch has it.
import { basename } from "node:path";
import { parse as parseYaml } from "yaml";
import { parseConfig, type EvokernelConfig } from "#shared/config.js";
import type { JobSpec } from "#shared/job.js";
import { UsageError } from "../errors.js";
import type { Git } from "../git.js";

/** Where the default branch is looked for when no --base is given, in order. */
const DEFAULT_BRANCHES = ["origin/HEAD", "main", "origin/main", "master", "origin/master"];
const CONFIG_FILES = [".github/evokernel.yml", ".github/evokernel.yaml"];

export type ReviewRequest = { base?: string; head?: string; optimize: boolean; seed?: number };

export type ReviewPlanInput = { spec: JobSpec; config: EvokernelConfig; baseRef: string };

export async function jobFromCheckout(git: Git, request: ReviewRequest): Promise<ReviewPlanInput> {
  const head = await git.resolve(request.head ?? "HEAD");
  const baseRef = request.base ?? (await defaultBranch(git));
  const baseTip = await git.resolve(baseRef);
  const base = (await git.mergeBase(baseTip, head)) ?? baseTip;
  const config = await readConfig(git, baseTip);
  const spec: JobSpec = {
    schema: 1,
    id: `review-${base.slice(0, 7)}-${head.slice(0, 7)}`,
    kind: "review",
    repo: await repoOf(git),
    sha: head,
    baseSha: base,
    tasks: [],
    roots: config.tasks,
    ...(config.paths === undefined ? {} : { paths: config.paths }),
    optimize: request.optimize || config.pullRequests === "optimize",
    budget: config.budget,
    proposer: config.proposer,
    ...(config.model === undefined ? {} : { model: config.model }),
    regressionThreshold: config.regressionThreshold,
    ...(config.thresholds === undefined ? {} : { thresholds: [...config.thresholds] }),
    ...(request.seed === undefined ? {} : { seed: request.seed }),
  };
  return { spec, config, baseRef };
}

async function defaultBranch(git: Git): Promise<string> {
  for (const ref of DEFAULT_BRANCHES) if (await git.hasRef(ref)) return ref;
  throw new UsageError(
    `no default branch found (looked for ${DEFAULT_BRANCHES.join(", ")}): pass --base REF, the branch a pull request would merge into`,
  );
}

/** The config at the default branch's tip; every default when there is none. */
async function readConfig(git: Git, commit: string): Promise<EvokernelConfig> {
  for (const file of CONFIG_FILES) {
    const bytes = await git.readFile(commit, file);
    if (bytes === null) continue;
    let raw: unknown;
    try {
      raw = parseYaml(Buffer.from(bytes).toString("utf8"));
    } catch (error) {
      throw new UsageError(
        `${file} at ${commit.slice(0, 7)} is not valid YAML: ${(error as Error).message}`,
        { cause: error },
      );
    }
    const parsed = parseConfig(raw);
    if (parsed.ok) return parsed.config;
    throw new UsageError(
      `${file} at ${commit.slice(0, 7)} is invalid:\n${parsed.errors.map((line) => `  - ${line}`).join("\n")}`,
    );
  }
  const fallback = parseConfig({});
  if (!fallback.ok) throw new Error("the default config does not parse");
  return fallback.config;
}

/** owner/name from a GitHub remote; a local repository is `local/<folder>`. */
async function repoOf(git: Git): Promise<JobSpec["repo"]> {
  const url = await git.originUrl();
  const match = url === null ? null : /github\.com[:/]+([^/]+)\/([^/]+?)(?:\.git)?\/?$/.exec(url);
  if (match?.[1] !== undefined && match[2] !== undefined)
    return { owner: match[1], name: match[2] };
  return { owner: "local", name: basename(git.root) };
}
