// Turns an LLM's reply into a kernel, or into a record of why it holds none. Pure: the
// reply's text and stop reason in, the parent kernel for edits, a result out; never throws.
//
// The reply is asked to give "Name: …", "Thought: …" and then either the whole kernel in
// one fenced block or SEARCH/REPLACE edits against the parent:
//
//   <<<<<<< SEARCH
//   lines of the parent, exactly
//   =======
//   their replacement
//   >>>>>>> REPLACE
//
// Edits win over fences when both appear (models often fence their edit blocks). A SEARCH
// text must be found in the parent exactly, or else line by line ignoring the blank space at
// the ends of lines; otherwise the reply fails (no guessing at where an edit was meant).

export type ReplyFailure =
  "truncated" | "refused" | "empty-reply" | "no-code" | "bad-edit" | "edit-not-found";

export type ParsedReply =
  | {
      ok: true;
      name: string;
      thought: string;
      source: string;
      /** How the code came: a whole kernel, or edits applied to the parent. */
      mode: "full" | "edits";
      edits: number;
    }
  | { ok: false; reason: ReplyFailure; message: string };

export type Reply = { text: string; stopReason: string | null };

const SEARCH_MARK = /^<{5,9}[ \t]*SEARCH\b/gm;
const EDIT_BLOCK =
  /^<{5,9}[ \t]*SEARCH\b[^\n]*\n([\s\S]*?)^={5,9}[ \t]*\n([\s\S]*?)^>{5,9}[ \t]*REPLACE\b[^\n]*$/gm;
const FENCE = /^[ \t]*(`{3,}|~{3,})[ \t]*([\w+#.-]*)[^\n]*\n([\s\S]*?)^[ \t]*\1[ \t]*$/gm;
const MAX_THOUGHT = 2000;

export function parseReply(reply: Reply, parent: string): ParsedReply {
  const text = reply.text.replace(/\r\n/g, "\n");
  if (reply.stopReason === "max_tokens" || reply.stopReason === "model_context_window_exceeded") {
    return fail(
      "truncated",
      `the reply was cut off (stop_reason ${reply.stopReason}) after ${text.length} characters: ` +
        "no code from it was used",
    );
  }
  if (reply.stopReason === "refusal") return fail("refused", "the model declined to answer");
  if (text.trim() === "") return fail("empty-reply", "the reply holds no text");

  const name = nameOf(text);
  const thought = thoughtOf(text);
  const markers = [...text.matchAll(SEARCH_MARK)].length;
  if (markers > 0) {
    const blocks = [...text.matchAll(EDIT_BLOCK)].map((m) => ({
      search: m[1] ?? "",
      replace: m[2] ?? "",
    }));
    if (blocks.length < markers) {
      return fail(
        "bad-edit",
        `the reply opens ${markers} SEARCH block(s) but only ${blocks.length} are complete ` +
          "(<<<<<<< SEARCH, =======, >>>>>>> REPLACE)",
      );
    }
    const applied = applyEdits(parent.replace(/\r\n/g, "\n"), blocks);
    if (!applied.ok) return applied;
    return { ok: true, name, thought, source: applied.source, mode: "edits", edits: blocks.length };
  }

  const fences = [...text.matchAll(FENCE)].map((m) => m[3] ?? "").filter((c) => c.trim() !== "");
  if (fences.length === 0) {
    const open = /^[ \t]*(`{3,}|~{3,})/m.test(text);
    return fail(
      "no-code",
      open
        ? "the reply opens a code fence that never closes"
        : "the reply holds neither a fenced code block nor SEARCH/REPLACE edits",
    );
  }
  const code = fences.reduce((a, b) => (b.length > a.length ? b : a));
  return { ok: true, name, thought, source: withNewline(code), mode: "full", edits: 0 };
}

type Edit = { search: string; replace: string };

function applyEdits(
  parent: string,
  edits: Edit[],
): { ok: true; source: string } | { ok: false; reason: ReplyFailure; message: string } {
  let source = parent;
  for (const [index, edit] of edits.entries()) {
    const where = `edit ${index + 1} of ${edits.length}`;
    if (edit.search.trim() === "") {
      if (parent.trim() === "") {
        source = edit.replace;
        continue;
      }
      return fail("bad-edit", `${where} has an empty SEARCH section`);
    }
    const next = replaceOnce(source, edit.search, edit.replace);
    if (next === null) {
      const first = edit.search.split("\n").find((line) => line.trim() !== "") ?? "";
      return fail(
        "edit-not-found",
        `${where}: its SEARCH text is not in the parent kernel (it begins ${JSON.stringify(first.trim().slice(0, 120))})`,
      );
    }
    source = next;
  }
  return { ok: true, source: withNewline(source) };
}

/**
 * `text` with the first occurrence of `search` replaced; null when there is none. Tried in
 * turn: the exact text starting a line; the same, line by line, ignoring blank space at both
 * ends of each line; the exact text anywhere (an edit inside one line).
 */
function replaceOnce(text: string, search: string, replace: string): string | null {
  const variants = [
    [search, replace],
    [search.replace(/\n$/, ""), replace.replace(/\n$/, "")],
  ] as const;
  for (const [s, r] of variants) {
    const at = lineStartIndex(text, s);
    if (at >= 0) return text.slice(0, at) + r + text.slice(at + s.length);
  }
  const lines = text.split("\n");
  const wanted = search
    .replace(/\n$/, "")
    .split("\n")
    .map((line) => line.trim());
  for (let i = 0; i + wanted.length <= lines.length; i++) {
    if (wanted.every((line, j) => (lines[i + j] ?? "").trim() === line)) {
      const replacement = replace.replace(/\n$/, "");
      const out = [...lines.slice(0, i), ...(replacement === "" ? [] : replacement.split("\n"))];
      return [...out, ...lines.slice(i + wanted.length)].join("\n");
    }
  }
  for (const [s, r] of variants) {
    const at = text.indexOf(s);
    if (at >= 0) return text.slice(0, at) + r + text.slice(at + s.length);
  }
  return null;
}

function lineStartIndex(text: string, search: string): number {
  for (let at = text.indexOf(search); at >= 0; at = text.indexOf(search, at + 1)) {
    if (at === 0 || text[at - 1] === "\n") return at;
  }
  return -1;
}

function nameOf(text: string): string {
  const m = /^[ \t>#*_-]*name[*_]*[ \t]*[:：][ \t]*(.+)$/im.exec(text);
  const raw = (m?.[1] ?? "")
    .replace(/[`*_]/g, "")
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9.]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 48)
    .replace(/-+$/, "");
  return raw === "" ? "llm-kernel" : raw;
}

/** The "Thought:" paragraph, else the prose before the code, folded to one paragraph. */
function thoughtOf(text: string): string {
  const lines = text.split("\n");
  const stop = (line: string) =>
    /^[ \t]*(`{3,}|~{3,}|<{5,9}[ \t]*SEARCH)/.test(line) ||
    /^[ \t>#*_-]*(code|name|edits?)[*_]*[ \t]*[:：]/i.test(line);
  const label = lines.findIndex((line) => /^[ \t>#*_-]*thought[*_]*[ \t]*[:：]/i.test(line));
  const taken: string[] = [];
  if (label >= 0) {
    taken.push((lines[label] ?? "").replace(/^[ \t>#*_-]*thought[*_]*[ \t]*[:：][*_]*/i, ""));
    for (const line of lines.slice(label + 1)) {
      if (stop(line)) break;
      taken.push(line);
    }
  } else {
    for (const line of lines) {
      if (/^[ \t>#*_-]*name[*_]*[ \t]*[:：]/i.test(line)) continue;
      if (stop(line)) break;
      taken.push(line);
    }
  }
  const folded = taken.join(" ").replace(/\s+/g, " ").trim();
  return folded.length > MAX_THOUGHT ? `${folded.slice(0, MAX_THOUGHT - 1)}…` : folded;
}

function withNewline(source: string): string {
  return source.endsWith("\n") ? source : `${source}\n`;
}

function fail(
  reason: ReplyFailure,
  message: string,
): { ok: false; reason: ReplyFailure; message: string } {
  return { ok: false, reason, message };
}
