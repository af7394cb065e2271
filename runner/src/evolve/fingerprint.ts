// The dedup key of a candidate: sha256 of its source with comments and blank space removed
// (and its defines and nvcc flags, when a tuner set any), so that a proposal differing only in formatting
// or comments is never compiled or timed twice.
import { createHash } from "node:crypto";

export type Language = "c" | "python";

export function fingerprint(
  source: string,
  defines: Readonly<Record<string, string>>,
  language: Language,
  flags: readonly string[] = [],
): string {
  const hash = createHash("sha256").update(normalizeSource(source, language));
  const sorted = Object.entries(defines).sort(([a], [b]) => a.localeCompare(b));
  if (sorted.length > 0) hash.update(`\0${JSON.stringify(sorted)}`);
  if (flags.length > 0) hash.update(`\0flags${JSON.stringify([...flags].sort())}`);
  return hash.digest("hex");
}

/**
 * Comments removed, string literals kept as written. C and CUDA: every run of blank space
 * goes, except one space where it separates two words (`unsigned int`). Python: line
 * structure and indentation stay (they are syntax); blank lines and trailing space go.
 */
export function normalizeSource(source: string, language: Language): string {
  const pieces = scan(source, language);
  if (language === "python") {
    return pieces
      .map((piece) => piece.text)
      .join("")
      .split("\n")
      .map((line) => line.trimEnd())
      .filter((line) => line !== "")
      .join("\n");
  }
  let out = "";
  for (const [index, piece] of pieces.entries()) {
    if (piece.kind !== "space") {
      out += piece.text;
      continue;
    }
    const before = out.at(-1) ?? "";
    const after = pieces[index + 1]?.text[0] ?? "";
    if (/\w/.test(before) && /\w/.test(after)) out += " ";
  }
  return out;
}

type Piece = { kind: "code" | "literal" | "space"; text: string };

/** Code, string literals and runs of blank space (comments count as space), in order. */
function scan(source: string, language: Language): Piece[] {
  const pieces: Piece[] = [];
  const push = (kind: Piece["kind"], text: string) => {
    const last = pieces.at(-1);
    if (last !== undefined && last.kind === kind && kind !== "literal") last.text += text;
    else pieces.push({ kind, text });
  };
  let index = 0;
  while (index < source.length) {
    const char = source[index] ?? "";
    const rest = source.slice(index, index + 3);
    if (char === '"' || char === "'") {
      const quote = language === "python" && (rest === '"""' || rest === "'''") ? rest : char;
      const end = literalEnd(source, index, quote);
      push("literal", source.slice(index, end));
      index = end;
    } else if (
      (language === "c" && rest.startsWith("//")) ||
      (language === "python" && char === "#")
    ) {
      index = lineEnd(source, index);
    } else if (language === "c" && rest.startsWith("/*")) {
      const close = source.indexOf("*/", index + 2);
      index = close === -1 ? source.length : close + 2;
      push("space", " ");
    } else if (language === "c" && /\s/.test(char)) {
      push("space", char);
      index += 1;
    } else {
      push("code", char);
      index += 1;
    }
  }
  return pieces;
}
/** Where a string literal opened by `quote` at `start` ends (after its closing quote). */
function literalEnd(source: string, start: number, quote: string): number {
  let index = start + quote.length;
  while (index < source.length) {
    if (source[index] === "\\") index += 2;
    else if (source.startsWith(quote, index)) return index + quote.length;
    else if (quote.length === 1 && source[index] === "\n") return index;
    else index += 1;
  }
  return source.length;
}

function lineEnd(source: string, from: number): number {
  const newline = source.indexOf("\n", from);
  return newline === -1 ? source.length : newline;
}
