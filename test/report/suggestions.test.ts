// Suggested changes on real diffs: a pull request made with git in a temporary repository,
// its per-file patch as GitHub's pulls.listFiles gives it, and an evolved kernel. Applying
// every suggestion the way GitHub does must give the evolved file, except for the changes
// reported outside the diff.
import { execa } from "execa";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  hunkRanges,
  mapSuggestions,
  renderPatch,
  type SuggestionComment,
} from "../../src/report/index.js";

let repo: string;

beforeAll(async () => {
  repo = await mkdtemp(join(tmpdir(), "evokernel-suggest-"));
  await git("init", "-q", "-b", "main");
  await git("config", "user.email", "test@example.com");
  await git("config", "user.name", "test");
  await git("config", "core.autocrlf", "false");
});

afterAll(async () => {
  await rm(repo, { recursive: true, force: true });
});

async function git(...args: string[]): Promise<string> {
  return (await execa("git", args, { cwd: repo, stripFinalNewline: false })).stdout;
}

/** The pull request's patch of one file, without the headers (GitHub's `patch` field). */
async function prPatch(file: string, base: string, head: string): Promise<string> {
  await writeFile(join(repo, file), base);
  await git("add", file);
  await git("commit", "-q", "-m", "base", "--allow-empty");
  await writeFile(join(repo, file), head);
  await git("add", file);
  await git("commit", "-q", "-m", "head", "--allow-empty");
  const diff = await git("diff", "HEAD~1", "HEAD", "--", file);
  return diff.slice(diff.indexOf("@@"));
}

/** Applies suggestions as GitHub does: each replaces its whole range of lines. */
function apply(text: string, comments: SuggestionComment[]): string {
  const eol = text.includes("\r\n") ? "\r\n" : "\n";
  const trailing = text.endsWith("\n");
  const lines = text.split(/\r?\n/);
  if (trailing) lines.pop();
  const sorted = [...comments].sort((a, b) => b.line - a.line);
  for (const comment of sorted) {
    const body = comment.body.split(/\r?\n/);
    const content = body.slice(1, -1);
    const start = comment.start_line ?? comment.line;
    lines.splice(start - 1, comment.line - start + 1, ...content);
  }
  return lines.join(eol) + (trailing ? eol : "");
}

const numbered = (count: number, prefix = "line") =>
  Array.from({ length: count }, (_, index) => `${prefix} ${index + 1}`);

describe("mapSuggestions", () => {
  it("replaces exactly the changed lines inside the PR's hunk", async () => {
    const base = numbered(30).join("\n") + "\n";
    const headLines = numbered(30);
    headLines[14] = "pr changed 15";
    headLines[15] = "pr changed 16";
    const head = headLines.join("\n") + "\n";
    const patch = await prPatch("a.cu", base, head);
    const evolvedLines = [...headLines];
    evolvedLines[15] = "evolved 16";
    const after = evolvedLines.join("\n") + "\n";

    const { comments, outside } = mapSuggestions(patch, "kernels/a.cu", head, after);
    expect(outside).toEqual([]);
    expect(comments).toEqual([
      { path: "kernels/a.cu", body: "```suggestion\nevolved 16\n```", line: 16, side: "RIGHT" },
    ]);
    expect(apply(head, comments)).toBe(after);
  });

  it("covers several hunks, a multi-line range, a deletion and an addition", async () => {
    const base = numbered(60).join("\n") + "\n";
    const headLines = numbered(60);
    headLines[4] = "pr 5";
    headLines[44] = "pr 45";
    const head = headLines.join("\n") + "\n";
    const patch = await prPatch("b.cu", base, head);
    expect(hunkRanges(patch)).toHaveLength(2);

    const evolved = [...headLines];
    evolved.splice(44, 2, "evolved 45"); // lines 45-46 become one: a range, shorter
    evolved.splice(5, 1); // line 6 deleted
    evolved.splice(3, 0, "inserted before 4"); // an addition after line 3
    const after = evolved.join("\n") + "\n";

    const { comments, outside } = mapSuggestions(patch, "b.cu", head, after);
    expect(outside).toEqual([]);
    expect(comments).toMatchSnapshot();
    const deletion = comments.find((comment) => comment.line === 6);
    expect(deletion?.body).toBe("```suggestion\n```");
    const range = comments.find((comment) => comment.line === 46);
    expect(range?.start_line).toBe(45);
    expect(range?.start_side).toBe("RIGHT");
    expect(apply(head, comments)).toBe(after);
  });

  it("returns a change outside every hunk apart, never as a suggestion", async () => {
    const base = numbered(40).join("\n") + "\n";
    const headLines = numbered(40);
    headLines[30] = "pr 31";
    const head = headLines.join("\n") + "\n";
    const patch = await prPatch("c.cu", base, head);
    const evolved = [...headLines];
    evolved[1] = "evolved 2"; // far from the PR's only hunk (lines 28-34)
    evolved[31] = "evolved 32";
    const after = evolved.join("\n") + "\n";

    const { comments, outside } = mapSuggestions(patch, "c.cu", head, after);
    expect(comments.map((comment) => comment.line)).toEqual([32]);
    expect(outside).toEqual([
      { startLine: 2, endLine: 2, before: "line 2\n", after: "evolved 2\n" },
    ]);
  });

  it("keeps a CRLF file's line endings", async () => {
    const base = numbered(12).join("\r\n") + "\r\n";
    const headLines = numbered(12);
    headLines[5] = "pr 6";
    const head = headLines.join("\r\n") + "\r\n";
    const patch = await prPatch("d.cu", base, head);
    // The optimizer hands back LF: the file keeps CRLF all the same.
    const evolved = [...headLines];
    evolved[6] = "evolved 7";
    const after = evolved.join("\n") + "\n";

    const { comments, outside } = mapSuggestions(patch, "d.cu", head, after);
    expect(outside).toEqual([]);
    expect(comments).toHaveLength(1);
    expect(comments[0]?.body).toBe("```suggestion\r\nevolved 7\r\n```");
    expect(apply(head, comments)).toBe(evolved.join("\r\n") + "\r\n");
  });

  it("fences code that holds backticks with a longer fence", async () => {
    const base = numbered(10).join("\n") + "\n";
    const headLines = numbered(10);
    headLines[4] = "pr 5";
    const head = headLines.join("\n") + "\n";
    const patch = await prPatch("e.py", base, head);
    const evolved = [...headLines];
    evolved[4] = 'doc = """```cuda\n````"""'.split("\n")[0] ?? "";
    evolved.splice(5, 0, "````");
    const after = evolved.join("\n") + "\n";

    const { comments } = mapSuggestions(patch, "e.py", head, after);
    const body = comments[0]?.body ?? "";
    expect(body.startsWith("`````suggestion\n")).toBe(true);
    expect(body.endsWith("\n`````")).toBe(true);
    expect(apply(head, comments)).toBe(after);
  });

  it("handles a file without a trailing newline", async () => {
    const base = numbered(8).join("\n");
    const headLines = numbered(8);
    headLines[7] = "pr 8";
    const head = headLines.join("\n");
    const patch = await prPatch("f.cu", base, head);
    expect(patch).toContain("\\ No newline at end of file");
    const evolved = [...headLines];
    evolved[7] = "evolved 8";
    const after = evolved.join("\n");

    const { comments, outside } = mapSuggestions(patch, "f.cu", head, after);
    expect(outside).toEqual([]);
    expect(comments).toEqual([
      { path: "f.cu", body: "```suggestion\nevolved 8\n```", line: 8, side: "RIGHT" },
    ]);
    expect(apply(head, comments)).toBe(after);
  });

  it("suggests nothing when the evolved kernel is the PR's", async () => {
    const head = numbered(5).join("\n") + "\n";
    const patch = await prPatch("g.cu", "", head);
    expect(mapSuggestions(patch, "g.cu", head, head)).toEqual({ comments: [], outside: [] });
  });
});

describe("hunkRanges", () => {
  it("reads GitHub's hunk headers; a hunk that only deletes has no RIGHT lines", () => {
    const patch = [
      "@@ -1,3 +1,4 @@",
      " a",
      "+b",
      " c",
      " d",
      "@@ -10,2 +11,0 @@ void f()",
      "-x",
      "-y",
      "@@ -20 +19 @@",
      "-p",
      "+q",
    ].join("\n");
    expect(hunkRanges(patch)).toEqual([
      { start: 1, end: 4 },
      { start: 19, end: 19 },
    ]);
  });
});

describe("renderPatch", () => {
  it("is a diff git applies to the PR's file", async () => {
    const before = numbered(6).join("\r\n") + "\r\n";
    const after = before.replace("line 3", "evolved 3");
    await writeFile(join(repo, "kernel.cu"), before);
    const patch = renderPatch([{ path: "kernel.cu", before, after: after.replace(/\r\n/g, "\n") }]);
    expect(patch).toMatchSnapshot();
    await writeFile(join(repo, "suggestion.patch"), patch);
    await git("apply", "suggestion.patch");
    expect(
      await execa("cat", ["kernel.cu"], { cwd: repo, stripFinalNewline: false }),
    ).toMatchObject({
      stdout: after,
    });
  });
});
