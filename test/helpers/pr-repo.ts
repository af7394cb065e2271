// A repository with one pull request's worth of history, for the tests that run the bundled
// app against the loopback GitHub (e2e, chaos): `main` holds kernels/softmax at BLOCK_SIZE
// 128; the branch `faster` holds what the recorded result's suggestion was made against (its
// path and content are checked against the head's tree, which the stand-in serves from this
// clone).
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

export interface PrRepo {
  readonly repo: string;
  readonly base: string;
  readonly head: string;
}

export function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@t",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@t",
    },
  }).trim();
}

/** The recorded result's suggestion's `before`: the head's kernel. */
export function suggestionBefore(): string {
  const fixture = new URL("../fixtures/app/review-result.json", import.meta.url);
  const review = JSON.parse(readFileSync(fixture, "utf8")) as {
    tasks: { suggestion: { before: string } | null }[];
  };
  return review.tasks[0]?.suggestion?.before ?? "";
}

/** `dir`/repo with the base commit on main and the head on `faster`; main checked out. */
export async function makePrRepo(dir: string): Promise<PrRepo> {
  const repo = join(dir, "repo");
  await mkdir(join(repo, "kernels/softmax"), { recursive: true });
  git(dir, "init", "-q", "-b", "main", repo);
  await writeFile(join(repo, "kernels/softmax/kernel.cu"), "#define BLOCK_SIZE 128\n");
  git(repo, "add", ".");
  git(repo, "commit", "-q", "-m", "base");
  const base = git(repo, "rev-parse", "HEAD");
  git(repo, "checkout", "-q", "-b", "faster");
  await writeFile(join(repo, "kernels/softmax/kernel.cu"), suggestionBefore());
  await writeFile(join(repo, "kernels/softmax/task.json"), '{"kernel": "kernel.cu"}\n');
  git(repo, "add", ".");
  git(repo, "commit", "-q", "-m", "head");
  const head = git(repo, "rev-parse", "HEAD");
  git(repo, "checkout", "-q", "main");
  return { repo, base, head };
}
