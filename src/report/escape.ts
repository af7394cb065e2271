// Every string that came from a pull request, a job's artifact, an LLM or a config reaches
// GitHub's markdown through one of these, chosen for where it lands: running text, a table
// cell, a code span or block, HTML, a mermaid label, a link's address. None of them lets the
// text make a mention, a link, an image, HTML, a table column or a heading of its own. The
// renderers in src/report call these; our own markup (tables, <details>, links to the run)
// is written around them.

/** Placed after `@` and `#` so GitHub sees no mention and no issue reference. */
const JOINER = "\u200D";

/**
 * Running markdown text on one line. Backslash escapes every ASCII punctuation mark that
 * starts markup in GFM: emphasis, links and images (`[`), HTML (`<`, `&`), code,
 * tables (`|`), autolinks (`://`, `www.`), math (`$`), headings and lists
 * at a line's start. GitHub links mentions after rendering, on the text itself, so a
 * backslash cannot stop those: a zero-width joiner after `@` (and after `#` before a
 * digit) does.
 */
export function mdText(text: string): string {
  const escaped = oneLine(text)
    .replace(/[\\`*_~[\]<>&|$]/g, "\\$&")
    // GFM's autolinks: `scheme://`, `www.`, `mailto:` and `xmpp:`.
    .replace(/:(?=\/\/)|(?<=\b(?:mailto|xmpp)):/gi, "\\:")
    .replace(/(?<=\bw{3})\./gi, "\\.")
    // A heading, list item, quote or rule only starts a line.
    .replace(/^(\s*)([#+\-=])(?=[#=-]*(?:\s|$))/, "$1\\$2")
    .replace(/^(\s*\d{1,9})([.)])(?=\s|$)/, "$1\\$2");
  return breakReferences(escaped);
}

/** Text in a table cell: running text, whose `|` is already escaped and newlines gone. */
export function cellText(text: string): string {
  return mdText(text);
}

/**
 * A code span longer-fenced than any backtick run inside; in a table cell `|` is escaped,
 * which GFM removes again inside the span. Mentions and links do not form in code.
 */
export function codeSpan(text: string, where: "text" | "cell" = "text"): string {
  let line = oneLine(text);
  if (where === "cell") line = line.replace(/\|/g, "\\|");
  if (line.trim() === "") return "` `";
  const longest = Math.max(0, ...(line.match(/`+/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(longest + 1);
  const pad = line.startsWith("`") || line.endsWith("`") ? " " : "";
  return `${fence}${pad}${line}${pad}${fence}`;
}

/** A fenced code block whose fence is longer than any backtick run in the text. */
export function codeBlock(text: string, language: string): string {
  const longest = Math.max(2, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(longest + 1);
  return `${fence}${language}\n${text}\n${fence}`;
}

const ENTITIES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
};

/** Text inside our own HTML (a <summary>, a <sub> line): entities, on one line. */
export function htmlText(text: string): string {
  const escaped = oneLine(text).replace(/[&<>"]/g, (char) => ENTITIES[char] ?? char);
  return breakReferences(escaped);
}

/**
 * A label inside a mermaid chart's quotes: only letters, digits and plain punctuation, so
 * a `"`, `]` or newline cannot end the label or the chart's line.
 */
export function mermaidLabel(text: string, max = 60): string {
  const kept = oneLine(text)
    .replace(/[^\p{L}\p{N} .,:;+×%/_-]/gu, " ")
    .replace(/\s+/g, " ")
    .trim();
  return kept.length > max ? `${kept.slice(0, max - 1)}…` : kept;
}

/**
 * A link's address: only an absolute http(s) URL, with the characters that would end a
 * markdown link percent-encoded; anything else gives null (the caller leaves the link out).
 */
export function safeUrl(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") return null;
  if (parsed.username !== "" || parsed.password !== "") return null;
  return parsed.href.replace(
    /[()<>\s[\]`'"]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`,
  );
}

/**
 * How a sentence is written: for markdown (code spans, escaped text) or for a place GitHub
 * shows as plain text (a check run's title), where escapes would show.
 */
export type Style = {
  readonly code: (text: string) => string;
  readonly text: (text: string) => string;
};

export const MARKDOWN: Style = { code: (text) => codeSpan(text), text: mdText };
export const PLAIN: Style = { code: oneLine, text: oneLine };

function oneLine(text: string): string {
  return text.replace(/[\r\n\t\v\f\u2028\u2029]+/g, " ");
}

function breakReferences(text: string): string {
  return text.replace(/@(?=[\p{L}\p{N}_-])/gu, `@${JOINER}`).replace(/#(?=\d)/g, `#${JOINER}`);
}

/** A link with our own words as its text; an address that is not safe leaves the words alone. */
export function link(words: string, url: string): string {
  const address = safeUrl(url);
  return address === null ? words : `[${words}](${address})`;
}
