// A commit's task folders, written out of git into a folder of our own (never the user's
// working tree), so base and head can sit side by side while the harness reads them.
import { dirname, join } from "node:path";
import { isUnder } from "#shared/glob.js";
import type { Git } from "../git.js";
import { makeFolder, writeData } from "./files.js";

export type Tree = {
  commit: string;
  /** Where the commit's files were written: `<dir>/<path in the repository>`. */
  dir: string;
  /** Files written, relative to the repository root. */
  files: string[];
  /** The folders (or files) that matched the roots, relative: where to look for tasks. */
  roots: string[];
};

/**
 * Writes every file of `commit` that lies under one of `roots` (folders or globs, relative
 * to the repository root) to `dir`.
 */
export async function writeTree(
  git: Git,
  commit: string,
  roots: readonly string[],
  dir: string,
): Promise<Tree> {
  const files = (await git.listFiles(commit)).filter((file) =>
    roots.some((root) => isUnder(file, root)),
  );
  await makeFolder(dir);
  const contents = await git.readFiles(commit, files);
  for (const [file, bytes] of contents) {
    const target = join(dir, ...file.split("/"));
    await makeFolder(dirname(target));
    await writeData(target, bytes);
  }
  return { commit, dir, files, roots: matchedRoots(files, roots) };
}

/** For each file, the shortest leading part of its path a root matches; each once. */
function matchedRoots(files: readonly string[], roots: readonly string[]): string[] {
  const found = new Set<string>();
  for (const file of files) {
    const parts = file.split("/");
    for (let length = 1; length <= parts.length; length++) {
      const prefix = parts.slice(0, length).join("/");
      if (roots.some((root) => isUnder(prefix, root))) {
        found.add(prefix);
        break;
      }
    }
  }
  return [...found].sort();
}
