// The one diff renderer: the evolved kernel against the file it replaces, named by its path
// in the repository (`a/kernels/softmax/kernel.cu`), as git writes it. The comment shows it;
// `review --out` writes it as suggestion.patch for `git apply`; the runner's result carries
// it. The file's line endings stay as they are.
import { createTwoFilesPatch, FILE_HEADERS_ONLY } from "diff";
import { lineEnding } from "./suggestions.js";

export type PatchFile = { path: string; before: string; after: string };

/** `--- a/<path>` / `+++ b/<path>` and the hunks; no jsdiff `Index:`/`====` banner. */
export function unifiedDiff(path: string, before: string, after: string): string {
  // The evolved source may come back with LF endings; keep the file's own.
  const eol = lineEnding(before);
  const kept = eol === "\r\n" ? after.replace(/\r?\n/g, "\r\n") : after;
  return createTwoFilesPatch(`a/${path}`, `b/${path}`, before, kept, undefined, undefined, {
    context: 3,
    headerOptions: FILE_HEADERS_ONLY,
  });
}

/** One patch for every suggestion, each file headed by `diff --git` like git writes them. */
export function renderPatch(files: readonly PatchFile[]): string {
  return files
    .filter((file) => file.before !== file.after)
    .map(
      (file) =>
        `diff --git a/${file.path} b/${file.path}\n${unifiedDiff(file.path, file.before, file.after)}`,
    )
    .join("");
}
