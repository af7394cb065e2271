// GitHub's size limits on what the app writes, and the trimming that keeps a text inside
// them with a pointer to the full result.

/** Issue and PR comment bodies. */
export const COMMENT_LIMIT = 65_536;
/** Check-run output.summary and output.text, each. */
export const CHECK_OUTPUT_LIMIT = 65_535;

/** `text` if it fits; otherwise its start and a closing line that says where the rest is. */
export function trimTo(text: string, limit: number, fullResultUrl?: string): string {
  if (text.length <= limit) return text;
  const note = fullResultUrl
    ? `\n\n… trimmed to GitHub's size limit; the full result is at ${fullResultUrl}`
    : "\n\n… trimmed to GitHub's size limit; the full result is in the job's run.";
  // Never cut inside a surrogate pair, and close an open <details> or code fence.
  let head = text.slice(0, Math.max(0, limit - note.length - 32));
  if (/[\uD800-\uDBFF]$/.test(head)) head = head.slice(0, -1);
  const fences = (head.match(/^```/gm) ?? []).length;
  const opened =
    (head.match(/<details>/g) ?? []).length - (head.match(/<\/details>/g) ?? []).length;
  const closers = (fences % 2 === 1 ? "\n```" : "") + "\n</details>".repeat(Math.max(0, opened));
  return head + closers + note;
}
