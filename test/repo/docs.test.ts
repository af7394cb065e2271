// The docs as a newcomer follows them: every relative link in README.md and docs/ leads to a
// file of this repository (tracked, inside it, the heading an anchor names there); every
// evokernel command line in README, INSTALL, RUNNERS, CLI and OPTIMIZE parses with the
// CLI's own option tables (runner/src/cli/registry.ts); and the defaults they state are the
// ones the code sets.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, posix, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { checkCommandLine } from "../../runner/src/cli/main.js";
import { DEFAULT_BUDGET } from "../../runner/src/cli/optimize.js";
import { COMMANDS } from "../../runner/src/cli/registry.js";
import { DEFAULTS } from "../../runner/src/evolve/engine.js";
import { OFFLINE_PARALLEL } from "../../runner/src/pipeline/optimize.js";
import { configSchema } from "../../src/shared/config.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
/** What a clone has: tracked files (not dist/ or a local .env), and the folders holding them. */
const tracked = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" })
  .split("\0")
  .filter((path) => path !== "");
const trackedFiles = new Set(tracked);
const trackedDirs = new Set(
  tracked.flatMap((path) => {
    const parts = path.split("/");
    return parts.slice(0, -1).map((_, index) => parts.slice(0, index + 1).join("/"));
  }),
);

const DOCS = tracked.filter((path) => path === "README.md" || /^docs\/.*\.md$/.test(path));
const COMMAND_DOCS = [
  "README.md",
  "docs/INSTALL.md",
  "docs/RUNNERS.md",
  "docs/CLI.md",
  "docs/OPTIMIZE.md",
];

function read(path: string): string {
  return readFileSync(join(root, path), "utf8");
}

/** The text outside code (fences and spans), where links are links. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "").replace(/`[^`\n]*`/g, "");
}

function links(markdown: string): string[] {
  const text = prose(markdown);
  const found: string[] = [];
  // [text](target "title"), with one level of brackets inside the text (image links)
  for (const match of text.matchAll(
    /\[(?:[^[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g,
  ))
    found.push(match[1] ?? "");
  for (const match of text.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm))
    found.push(match[1] ?? "");
  for (const match of text.matchAll(/<(?:a|img)\s[^>]*?(?:href|src)="([^"]+)"/g))
    found.push(match[1] ?? "");
  return found;
}

/** GitHub's anchors for a file's headings (lower case, punctuation dropped, spaces to -). */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  const text = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "");
  for (const match of text.matchAll(/^#{1,6}\s+(.*?)\s*#*\s*$/gm)) {
    const heading = (match[1] ?? "")
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .replace(/<[^>]+>/g, "")
      .replace(/[`*]/g, "");
    const slug = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    result.add(count === 0 ? slug : `${slug}-${count}`);
  }
  for (const match of text.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) result.add(match[1] ?? "");
  return result;
}

/** Where a relative link leads: problems as sentences, none when it resolves in the repository. */
function linkProblem(from: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//")) return undefined;
  const [pathPart = "", anchor] = target.split("#", 2);
  const path = decodeURIComponent(pathPart.split("?")[0] ?? "");
  const absolute = path === "" ? join(root, from) : resolve(root, dirname(from), path);
  const inRepo = relative(root, absolute).split("\\").join("/");
  if (inRepo.startsWith("..") || inRepo === "")
    return `${from}: ${target} leads outside the repository`;
  const isFile = trackedFiles.has(inRepo);
  if (!isFile && !trackedDirs.has(inRepo))
    return `${from}: ${target} names ${inRepo}, which the repository does not hold`;
  if (anchor !== undefined && anchor !== "" && isFile && inRepo.endsWith(".md")) {
    if (!anchors(read(inRepo)).has(anchor.toLowerCase()))
      return `${from}: ${target} names #${anchor}, a heading ${posix.basename(inRepo)} does not have`;
  }
  return undefined;
}

/** Files named in code spans (`docs/DESIGN.md`, `../x/notes.md`): a reader looks for them too. */
function namedFiles(markdown: string): string[] {
  const outsideBlocks = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "");
  return [...outsideBlocks.matchAll(/`((?:\.{1,2}\/)*[\w.-]+(?:\/[\w.-]+)+\.md)(?:#[^`]*)?`/g)].map(
    (match) => match[1] ?? "",
  );
}

/** A named file: in the repository, from its root or from the doc's folder. */
function namedFileProblem(from: string, path: string): string | undefined {
  const fromDoc = linkProblem(from, path);
  if (fromDoc === undefined || path.startsWith("..")) return fromDoc;
  return linkProblem("README.md", path) === undefined ? undefined : fromDoc;
}

describe("links", () => {
  it("are checked in README.md and every docs/ page", () => {
    expect(DOCS).toContain("README.md");
    expect(DOCS).toContain("docs/OPTIMIZE.md");
  });

  it("lead to files of the repository (tracked, inside it), and to headings they have", () => {
    const problems = DOCS.flatMap((doc) =>
      links(read(doc)).flatMap((target) => linkProblem(doc, target) ?? []),
    );
    expect(problems).toEqual([]);
  });

  it("and the repository's files named in code spans are in the repository", () => {
    const problems = DOCS.flatMap((doc) =>
      namedFiles(read(doc)).flatMap((path) => namedFileProblem(doc, path) ?? []),
    );
    expect(problems).toEqual([]);
    expect(
      namedFiles("see `../shared/notes/verification.md` and `docs/CLI.md`, `comment.md`"),
    ).toEqual(["../shared/notes/verification.md", "docs/CLI.md"]);
    expect(namedFileProblem("docs/OPTIMIZE.md", "shared/notes/evolution.md")).toMatch(
      /does not hold/,
    );
    expect(namedFileProblem("docs/SECURITY.md", "docs/DESIGN.md")).toBeUndefined();
  });

  it("are found and judged as a reader would follow them", () => {
    const sample =
      "[a](../shared/notes/x.md) [b](docs/CLI.md#exit-codes) [c](docs/CLI.md#nope) " +
      "[d](https://example.com) `[e](nowhere.md)` [f](docs/) [g](missing.md)\n[h]: docs/APP.md\n";
    const problems = links(sample).map((target) => linkProblem("README.md", target));
    expect(problems).toEqual([
      "README.md: ../shared/notes/x.md leads outside the repository",
      undefined,
      "README.md: docs/CLI.md#nope names #nope, a heading CLI.md does not have",
      undefined,
      undefined,
      "README.md: missing.md names missing.md, which the repository does not hold",
      undefined,
    ]);
  });
});

/** A command line as written in a doc, and where. */
type Usage = { doc: string; text: string; args: string[]; literal: boolean };

const PROGRAM =
  /^(?:evokernel|evk|bin\/evokernel\.js|\.\/bin\/evokernel\.js|dist\/evokernel\.mjs)$/;

/** Words as a shell splits them ('…' and "…" kept as one word, quotes dropped). */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map(
    (match) => match[1] ?? match[2] ?? match[3] ?? "",
  );
}

/** The evokernel command in one shell command (program first, after env, npx, node, docker). */
function commandIn(segment: string): string[] | undefined {
  let rest = words(segment.replace(/^\s*\$\s+/, ""));
  while (rest[0] !== undefined && /^[A-Z_][A-Z0-9_]*=/.test(rest[0])) rest = rest.slice(1);
  if (rest[0] === "npx" || rest[0] === "node") rest = rest.slice(1);
  if (rest[0] === "docker") {
    // docker run … IMAGE evokernel ARGS: the program is the first word naming it.
    const at = rest.findIndex((word) => PROGRAM.test(word));
    rest = at === -1 ? [] : rest.slice(at);
  }
  if (rest[0] === undefined || !PROGRAM.test(rest[0])) return undefined;
  // `evokernel CLI (Node) ──► …` in a diagram names the program, not a command line.
  if (rest[1] !== undefined && !/^[-a-z<[…]/.test(rest[1])) return undefined;
  return rest.slice(1);
}

function usages(doc: string): Usage[] {
  const markdown = read(doc);
  const found: Usage[] = [];
  const add = (text: string, literal: boolean) => {
    // A shell comment ends the command; && and ; begin another.
    const command = text.replace(/(^|\s)#.*$/, "");
    for (const segment of command.split(/&&|;|\|\|/)) {
      // A pipe to another program ends it, unless the bars are a synopsis's alternatives.
      const synopsis = /[[\]<>…{}]|\|\s*-/.test(segment);
      const cut = synopsis ? segment : (segment.split(/\s\|\s/)[0] ?? "");
      const args = commandIn(cut);
      if (args !== undefined && args.length > 0)
        found.push({ doc, text: cut.trim(), args, literal: literal && !synopsis });
    }
  };
  for (const block of markdown.matchAll(/^(```|~~~)([^\n]*)\n([\s\S]*?)^\1[^\n]*$/gm)) {
    for (const line of (block[3] ?? "").split("\n")) add(line, true);
  }
  // Spans name commands and flags in prose (`evokernel job --spec`): names checked, not values.
  const outsideBlocks = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "");
  for (const span of outsideBlocks.matchAll(/`([^`\n]+)`/g)) add(span[1] ?? "", false);
  return found;
}

const GLOBAL_FLAGS = new Set(["--help", "-h", "--version", "-V", "-v"]);

/** A synopsis or a span: the command exists and takes every flag it names. */
async function checkNames(args: readonly string[]): Promise<void> {
  const [first = "", ...rest] = args;
  const named = (word: string) =>
    word
      .replace(/[[\]…]/g, " ")
      .split(/[|\s]+/)
      .filter((part) => /^--?[A-Za-z]/.test(part))
      .map((part) => part.split("=")[0] ?? part);
  if (first.startsWith("-")) {
    for (const flag of args.flatMap(named))
      if (!GLOBAL_FLAGS.has(flag)) throw new Error(`evokernel has no option ${flag}`);
    return;
  }
  // evokernel <command> …, evokernel help <command>: placeholders, not names.
  if (/^[<[…]/.test(first)) return;
  if (first === "help") {
    const topic = rest[0];
    return checkCommandLine(
      topic === undefined || /^[<[]/.test(topic) ? ["help"] : ["help", topic],
    );
  }
  const entry = COMMANDS.find((command) => command.name === first);
  if (entry === undefined) throw new Error(`no command "${first}"`);
  const options = (await entry.load()).options;
  const known = new Set([
    "--help",
    "-h",
    ...Object.keys(options).map((name) => `--${name}`),
    ...Object.values(options).flatMap((option) =>
      option.short === undefined ? [] : [`-${option.short}`],
    ),
  ]);
  for (const flag of rest.flatMap(named))
    if (!known.has(flag)) throw new Error(`evokernel ${first} has no option ${flag}`);
}

/** Mistakes the docs show on purpose, to show the CLI's answer: each must stay a mistake. */
const DELIBERATE = ["evokernel tsks"];

async function problemOf(usage: Usage): Promise<string | undefined> {
  try {
    if (usage.literal) await checkCommandLine(usage.args);
    else await checkNames(usage.args);
    return undefined;
  } catch (error) {
    return `${usage.doc}: \`${usage.text}\`: ${error instanceof Error ? error.message : String(error)}`;
  }
}

describe("command lines", () => {
  it("are found in the docs a user follows, code blocks and spans both", () => {
    const all = COMMAND_DOCS.flatMap(usages);
    expect(all.length).toBeGreaterThan(30);
    const texts = all.map((usage) => usage.text);
    expect(texts).toContain("node bin/evokernel.js bench softmax");
    expect(all.filter((usage) => usage.doc === "docs/CLI.md").length).toBeGreaterThan(10);
  });

  it("parse with the CLI's own option tables: every command and flag exists", async () => {
    const all = COMMAND_DOCS.flatMap(usages);
    const problems = (
      await Promise.all(
        all.filter((usage) => !DELIBERATE.includes(usage.text)).map((usage) => problemOf(usage)),
      )
    ).filter((problem) => problem !== undefined);
    expect(problems).toEqual([]);
    for (const text of DELIBERATE) {
      const shown = all.filter((usage) => usage.text === text);
      expect(shown.length, `${text} is still in the docs`).toBeGreaterThan(0);
      for (const usage of shown) expect(await problemOf(usage), text).toBeDefined();
    }
  });

  it("are refused when they name a command or flag the CLI does not have", async () => {
    const sample = (line: string, literal: boolean): Usage => ({
      doc: "X.md",
      text: line,
      args: commandIn(line) ?? [],
      literal,
    });
    expect(await problemOf(sample("evokernel selftest --quick", false))).toMatch(
      /selftest has no option --quick/,
    );
    expect(await problemOf(sample("evk selftest --quick", true))).toMatch(
      /selftest has no option --quick/,
    );
    expect(await problemOf(sample("evokernel bench softmax --candidate", true))).toMatch(
      /--candidate needs a value/,
    );
    expect(await problemOf(sample("evokernel benchh softmax", true))).toMatch(/unknown command/);
    expect(await problemOf(sample("evokernel tasks [PATH…] [--prob]", false))).toMatch(
      /tasks has no option --prob/,
    );
    expect(await problemOf(sample("evokernel --help | --version | -V", false))).toBeUndefined();
    expect(await problemOf(sample("evokernel --help | --versio", false))).toMatch(/--versio/);
    expect(
      await problemOf(sample("docker run --rm --gpus all img:v1 evokernel device", true)),
    ).toBeUndefined();
    expect(commandIn("sed -i '1i // evokernel install check' kernels/softmax/kernel.cu")).toBe(
      undefined,
    );
  });
});

/** The `(default …)` of a flag in a command's --help text, its continuation lines joined. */
function helpDefault(usage: string, flag: string): string | undefined {
  const lines = usage.split("\n");
  const at = lines.findIndex((line) => new RegExp(`^\\s+(?:-\\w, )?${flag}\\b`).test(line));
  if (at === -1) return undefined;
  const indent = /^\s*/.exec(lines[at + 1] ?? "")?.[0].length ?? 0;
  let text = lines[at] ?? "";
  for (let next = at + 1; next < lines.length && indent > 8; next++) {
    const line = lines[next] ?? "";
    if (/^\s+-/.test(line) || line.trim() === "") break;
    text += ` ${line.trim()}`;
  }
  return /\(default:? ([^)]*)\)/.exec(text)?.[1];
}

/** The numbers a default names, in order: what must agree between the docs and the code. */
function numbers(text: string): string[] {
  return [...text.matchAll(/\d+(?:\.\d+)?/g)].map((match) => match[0]);
}

describe("defaults the docs state", () => {
  it("CLI.md's flag tables say what each command's --help says (its numbers from the code)", async () => {
    const cli = read("docs/CLI.md");
    const sections = cli.split(/^## /m).slice(1);
    const compared: string[] = [];
    for (const section of sections) {
      const name = /^`evokernel (\w+)/.exec(section)?.[1];
      const entry = COMMANDS.find((command) => command.name === name);
      if (entry === undefined) continue;
      const usage = (await entry.load()).usage;
      for (const row of section.matchAll(/^\| `(?:-\w`, `)?(--[\w-]+)[^|]*\|(.*)\|\s*$/gm)) {
        const flag = row[1] ?? "";
        const stated = /\(default:? ([^)]*)\)/.exec(row[2] ?? "")?.[1];
        const help = helpDefault(usage, flag);
        if (stated === undefined || help === undefined) continue;
        compared.push(`${name} ${flag}`);
        expect(numbers(stated), `CLI.md: ${name} ${flag} (default ${stated})`).toEqual(
          numbers(help),
        );
      }
    }
    expect(compared).toEqual(
      expect.arrayContaining([
        "optimize --candidates",
        "optimize --minutes",
        "optimize --usd",
        "optimize --parallel",
        "optimize --population",
      ]),
    );
  });

  it("optimize's budgets and --parallel in OPTIMIZE.md are the CLI's", () => {
    const optimize = read("docs/OPTIMIZE.md");
    const row = (flag: string) =>
      new RegExp(`^\\| \`${flag} \\w\` \\|[^|]*\\| ([^|]*?) \\|$`, "m").exec(optimize)?.[1];
    expect(numbers(row("--candidates") ?? "")).toEqual([String(DEFAULT_BUDGET.candidates)]);
    expect(numbers(row("--minutes") ?? "")).toEqual([String(DEFAULT_BUDGET.seconds / 60)]);
    expect(numbers(row("--usd") ?? "")).toEqual([String(DEFAULT_BUDGET.usd)]);
    const parallel = /P = --parallel, default (\d+) for the llm,\s+(\d+) for the tuners/.exec(
      optimize,
    );
    expect(parallel?.slice(1)).toEqual([String(DEFAULTS.parallel), String(OFFLINE_PARALLEL)]);
    expect(optimize).not.toMatch(/P = --parallel, \d+\)/);
  });

  it("OPTIMIZE.md gives the app's budgets (the config's defaults) and says why they differ", () => {
    const optimize = read("docs/OPTIMIZE.md");
    const app = configSchema.parse({}).budget;
    const stated =
      /The app's defaults are smaller: (\d+) candidates, (\d+) minutes and \$(\d+)/.exec(optimize);
    expect(stated?.slice(1)).toEqual([
      String(app.candidates),
      String(app.minutes),
      String(app.usd),
    ]);
  });
});
