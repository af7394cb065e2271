// The evolved kernel as a unified diff a person can `git apply` (`review --out` writes it
// as suggestion.patch); the line endings of the file stay as they are.
import { createTwoFilesPatch } from "diff";
import { lineEnding } from "./suggestions.js";

export type PatchFile = { path: string; before: string; after: string };

/** One diff for every suggestion, paths as `a/<path>` and `b/<path>` like git writes them. */
export function renderPatch(files: readonly PatchFile[]): string {
  return files
    .filter((file) => file.before !== file.after)
    .map((file) => {
      // The evolved source may come back with LF endings; keep the file's own.
      const eol = lineEnding(file.before);
      const after = eol === "\r\n" ? file.after.replace(/\r?\n/g, "\r\n") : file.after;
      const text = createTwoFilesPatch(
        `a/${file.path}`,
        `b/${file.path}`,
        file.before,
        after,
        undefined,
        undefined,
        { context: 3 },
      );
      // git writes its own header: diff --git, then --- and +++ without a leading "====".
      const body = text.replace(/^(?:Index: .*\n)?=+\n/, "");
      return `diff --git a/${file.path} b/${file.path}\n${body}`;
    })
    .join("");
}
