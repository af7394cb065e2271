#!/usr/bin/env node
// npm run release-action -- TAG: tags a commit that ships the Action's bundled runner.
// The commit is HEAD plus action/dist/evokernel.mjs (the CLI bundled by esbuild, runnable by
// a bare `node`), made with a temporary index: the branch, the index and the working tree
// stay as they were, and main never carries a build output that goes stale with every
// change. A workflow's `uses: OWNER/evokernel/action@TAG` then runs without npm on the GPU
// runner. Refuses a working tree with uncommitted changes (the bundle would not be the
// commit's code) and a tag that exists.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleCli } from "./bundle.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const BUNDLE_PATH = "action/dist/evokernel.mjs";

function git(args, env = {}) {
  return execFileSync("git", args, {
    cwd: root,
    encoding: "utf8",
    env: { ...process.env, ...env },
  }).trim();
}

function fail(message) {
  console.error(`release-action: ${message}`);
  process.exit(2);
}

const tag = process.argv[2];
if (!tag || !/^v\d+\.\d+\.\d+(-[\w.]+)?$/.test(tag))
  fail("usage: npm run release-action -- vMAJOR.MINOR.PATCH (e.g. v0.1.0)");
if (git(["tag", "--list", tag]) !== "") fail(`tag ${tag} exists`);
if (git(["status", "--porcelain", "--untracked-files=no"]) !== "")
  fail("the working tree has uncommitted changes: the bundle would not be HEAD's code");

const dir = mkdtempSync(join(tmpdir(), "evokernel-release-"));
try {
  const bundle = await bundleCli(join(dir, "evokernel.mjs"));
  const blob = git(["hash-object", "-w", bundle]);
  const index = { GIT_INDEX_FILE: join(dir, "index") };
  git(["read-tree", "HEAD"], index);
  git(["update-index", "--add", "--cacheinfo", `100644,${blob},${BUNDLE_PATH}`], index);
  const tree = git(["write-tree"], index);
  const head = git(["rev-parse", "HEAD"]);
  const commit = git([
    "commit-tree",
    tree,
    "-p",
    head,
    "-m",
    `evokernel ${tag}: the Action's bundled runner (${BUNDLE_PATH}) on ${head.slice(0, 12)}`,
  ]);
  git(["tag", tag, commit]);
  console.log(`${tag} → ${commit} (${head.slice(0, 12)} + ${BUNDLE_PATH})`);
  console.log(`push it: git push origin ${tag}; use it: uses: OWNER/evokernel/action@${tag}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
