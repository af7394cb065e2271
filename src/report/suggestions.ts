// Turns an evolved kernel into GitHub suggested changes on the pull request's file. GitHub
// accepts a suggestion only on lines inside one hunk of the PR's diff (RIGHT side), and a
// suggestion replaces its whole range: so each change of the file gets exactly its own
// lines as the range, and a change that falls outside every hunk is returned apart (the
// app pushes those as a commit or links a patch instead).
import { diffArrays, parsePatch } from "diff";

export type SuggestionComment = {
  path: string;
  body: string;
  /** The last line of the range, in the PR's version of the file. */
  line: number;
  side: "RIGHT";
  start_line?: number;
  start_side?: "RIGHT";
};

/**
 * One change to the file: lines startLine..endLine of the PR's version (none when endLine is
 * startLine - 1: an insertion before startLine) become `after`.
 */
export type LineChange = { startLine: number; endLine: number; before: string; after: string };

export type SuggestionMapping = { comments: SuggestionComment[]; outside: LineChange[] };

type Range = { start: number; end: number };

export function mapSuggestions(
  patch: string,
  path: string,
  before: string,
  after: string,
): SuggestionMapping {
  const hunks = hunkRanges(patch);
  const eol = lineEnding(before);
  const lines = splitLines(before);
  const used: Range[] = [];
  const comments: SuggestionComment[] = [];
  const outside: LineChange[] = [];
  for (const change of lineChanges(lines, splitLines(after))) {
    const placed = place(change, lines, hunks, used);
    const asChange: LineChange = {
      startLine: change.start,
      endLine: change.start + change.removed.length - 1,
      before: change.removed.map((line) => line + eol).join(""),
      after: change.added.map((line) => line + eol).join(""),
    };
    if (placed === null) {
      outside.push(asChange);
      continue;
    }
    used.push(placed.range);
    comments.push(comment(path, placed.range, placed.replacement, eol));
  }
  return { comments, outside };
}

type Change = { start: number; removed: string[]; added: string[] };

/** The RIGHT-side line range of each hunk of a PR file's patch (GitHub's `patch` field). */
export function hunkRanges(patch: string): Range[] {
  if (patch.trim() === "") return [];
  return parsePatch(patch)
    .flatMap((file) => file.hunks)
    .filter((hunk) => hunk.newLines > 0)
    .map((hunk) => ({ start: hunk.newStart, end: hunk.newStart + hunk.newLines - 1 }));
}

/**
 * The changes from `before` to `after`, line by line: runs of removed and added lines with
 * where they start in `before` (1-based; for a pure insertion, the line it goes before).
 */
function lineChanges(before: string[], after: string[]): Change[] {
  const changes: Change[] = [];
  let line = 1;
  let current: Change | null = null;
  for (const part of diffArrays(before, after)) {
    if (!part.added && !part.removed) {
      if (current !== null) changes.push(current);
      current = null;
      line += part.value.length;
      continue;
    }
    current ??= { start: line, removed: [], added: [] };
    if (part.removed) {
      current.removed.push(...part.value);
      line += part.value.length;
    } else {
      current.added.push(...part.value);
    }
  }
  if (current !== null) changes.push(current);
  return changes;
}

/**
 * The range a change's suggestion covers, and what replaces it. A replacement or deletion
 * covers exactly its lines; an insertion takes the line above (or below) as its range and
 * writes that line back beside the new ones, since a suggestion needs at least one line.
 */
function place(
  change: Change,
  lines: string[],
  hunks: Range[],
  used: Range[],
): { range: Range; replacement: string[] } | null {
  const fits = (range: Range) =>
    hunks.some((hunk) => hunk.start <= range.start && range.end <= hunk.end) &&
    !used.some((taken) => taken.start <= range.end && range.start <= taken.end);
  if (change.removed.length > 0) {
    const range = { start: change.start, end: change.start + change.removed.length - 1 };
    return fits(range) ? { range, replacement: change.added } : null;
  }
  const above = change.start - 1;
  const aboveLine = lines[above - 1];
  if (aboveLine !== undefined && fits({ start: above, end: above })) {
    return { range: { start: above, end: above }, replacement: [aboveLine, ...change.added] };
  }
  const below = change.start;
  const belowLine = lines[below - 1];
  if (belowLine !== undefined && fits({ start: below, end: below })) {
    return { range: { start: below, end: below }, replacement: [...change.added, belowLine] };
  }
  return null;
}

function comment(
  path: string,
  range: Range,
  replacement: string[],
  eol: string,
): SuggestionComment {
  const body = suggestionBlock(replacement, eol);
  if (range.start === range.end) return { path, body, line: range.end, side: "RIGHT" };
  return {
    path,
    body,
    line: range.end,
    side: "RIGHT",
    start_line: range.start,
    start_side: "RIGHT",
  };
}

/**
 * A ```suggestion block, fenced longer than any backtick run in the code so the code cannot
 * close it; lines joined with the file's own line ending. No lines: the range is deleted.
 */
export function suggestionBlock(lines: readonly string[], eol = "\n"): string {
  const longest = Math.max(
    2,
    ...lines.flatMap((line) => line.match(/`+/g) ?? []).map((run) => run.length),
  );
  const fence = "`".repeat(longest + 1);
  const content = lines.length === 0 ? "" : lines.join(eol) + eol;
  return `${fence}suggestion${eol}${content}${fence}`;
}

/** CRLF when most line breaks in the file are, else LF. */
export function lineEnding(text: string): "\r\n" | "\n" {
  const crlf = text.match(/\r\n/g)?.length ?? 0;
  const all = text.match(/\n/g)?.length ?? 0;
  return crlf > 0 && crlf * 2 >= all ? "\r\n" : "\n";
}

/** Lines without their endings; a final line ending adds no empty line. */
export function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split(/\r?\n/);
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}
