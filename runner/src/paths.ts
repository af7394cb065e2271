// Where things live: the repository root (found from this file, so any working directory
// works), the harness package and the build cache.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

let root: string | undefined;

/** The folder holding runner/harness; $EVOKERNEL_ROOT overrides (a bundle run elsewhere). */
export function repoRoot(): string {
  root ??= process.env["EVOKERNEL_ROOT"] ?? findRootAbove(dirname(fileURLToPath(import.meta.url)));
  return root;
}

function findRootAbove(start: string): string {
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, "runner", "harness"))) return dir;
    if (dirname(dir) === dir) return process.cwd();
  }
}

export function harnessDir(): string {
  return join(repoRoot(), "runner", "harness");
}

export function kernelsDir(): string {
  return join(repoRoot(), "kernels");
}

/** Build outputs and torch extension builds: $EVOKERNEL_CACHE or .cache/evokernel. */
export function cacheDir(): string {
  return process.env["EVOKERNEL_CACHE"] ?? join(repoRoot(), ".cache", "evokernel");
}

/** The version in package.json ("unknown" when it cannot be read). */
export function packageVersion(): string {
  const text = readFileSync(join(repoRoot(), "package.json"), "utf8");
  const parsed: unknown = JSON.parse(text);
  const value =
    typeof parsed === "object" && parsed !== null && "version" in parsed ? parsed.version : null;
  return typeof value === "string" ? value : "unknown";
}
