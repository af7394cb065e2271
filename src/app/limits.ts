// GitHub's size limits on what the app writes, and the trimming that keeps a text inside
// them with a pointer to the full result. Each limit carries its unit: GitHub counts a
// comment body in characters but a check run's output.summary and output.text in bytes
// (UTF-8), so a report full of ± × µ trimmed by characters is still too long (422, and the
// check run stays in progress).

export interface SizeLimit {
  readonly max: number;
  readonly unit: "characters" | "bytes";
}

/** Issue and PR comment bodies. */
export const COMMENT_LIMIT: SizeLimit = { max: 65_536, unit: "characters" };
/** Check-run output.summary and output.text, each. */
export const CHECK_OUTPUT_LIMIT: SizeLimit = { max: 65_535, unit: "bytes" };

function sizeOf(text: string, unit: SizeLimit["unit"]): number {
  return unit === "bytes" ? Buffer.byteLength(text, "utf8") : text.length;
}

/**
 * `text` if it fits; otherwise its start and a closing line that says where the rest is.
 * A bare number is a limit in characters.
 */
export function trimTo(text: string, limit: number | SizeLimit, fullResultUrl?: string): string {
  const { max, unit }: SizeLimit =
    typeof limit === "number" ? { max: limit, unit: "characters" } : limit;
  if (sizeOf(text, unit) <= max) return text;
  const note = fullResultUrl
    ? `\n\n… trimmed to GitHub's size limit; the full result is at ${fullResultUrl}`
    : "\n\n… trimmed to GitHub's size limit; the full result is in the job's run.";
  // The longest start (in characters) whose trimmed form fits: a character is 1 to 4 bytes.
  let low = 0;
  let high = Math.min(text.length, max);
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (sizeOf(trimmedAt(text, mid, note), unit) <= max) low = mid;
    else high = mid - 1;
  }
  return trimmedAt(text, low, note);
}

/** The first `length` characters, closing an open code fence or <details>, and the note. */
function trimmedAt(text: string, length: number, note: string): string {
  let head = text.slice(0, length);
  // Never cut inside a surrogate pair.
  if (/[\uD800-\uDBFF]$/.test(head)) head = head.slice(0, -1);
  const fences = (head.match(/^```/gm) ?? []).length;
  const opened =
    (head.match(/<details>/g) ?? []).length - (head.match(/<\/details>/g) ?? []).length;
  const closers = (fences % 2 === 1 ? "\n```" : "") + "\n</details>".repeat(Math.max(0, opened));
  return head + closers + note;
}

/** Issue and pull request titles (GitHub refuses a longer one with 422). */
export const TITLE_LIMIT = 256;

export function fitTitle(title: string): string {
  if (title.length <= TITLE_LIMIT) return title;
  let head = title.slice(0, TITLE_LIMIT - 1);
  if (/[\uD800-\uDBFF]$/.test(head)) head = head.slice(0, -1);
  return `${head}…`;
}

/** A check run's output inside GitHub's byte limits, whoever built it. */
export function fitCheckOutput<T extends { summary: string; text?: string }>(output: T): T {
  return {
    ...output,
    summary: trimTo(output.summary, CHECK_OUTPUT_LIMIT),
    ...(output.text === undefined ? {} : { text: trimTo(output.text, CHECK_OUTPUT_LIMIT) }),
  };
}
