// Untrusted strings (task names, kernel paths, configuration names, harness messages, the
// GPU's name, an LLM's verdict, a night's runner) rendered through every renderer that
// writes markdown for GitHub, then parsed as GitHub would (marked, GFM): no link, image,
// HTML, mention, heading or table column may come from them. Each payload is a class of
// attack; the renderers must escape for where the string lands.
import { marked, type Token, type Tokens } from "marked";
import { describe, expect, it } from "vitest";
import { renderCheckRun, renderComment } from "../../src/report/index.js";
import { renderDriftIssue, renderNightlyPull } from "../../src/report/nightly.js";
import {
  codeBlock,
  codeSpan,
  htmlText,
  mdText,
  mermaidLabel,
  safeUrl,
} from "../../src/report/escape.js";
import type { Drift, Night, Proposal } from "../../src/shared/nightly.js";
import type { TaskReview } from "../../src/shared/review.js";
import {
  compileErrorTask,
  optimizeResult,
  passedTask,
  review,
  timing,
  wrongTask,
} from "../helpers/review-fixtures.js";

const RUN_URL = "https://github.com/acme/kernels/actions/runs/1";

const PAYLOADS: Record<string, string> = {
  mention: "@everyone and @acme/maintainers look",
  "issue reference": "fixes #1 and acme/other#2",
  link: "[click](http://evil.example/x)",
  "reference link": "[click][1]\n\n[1]: http://evil.example/x",
  image: "![i](http://evil.example/x.png)",
  "html image": '<img src=x onerror="alert(1)">',
  "html block": "<details open><summary>evil</summary>",
  "closing our html": "</summary></details><img src=x>",
  autolink: "see http://evil.example/x or www.evil.example",
  "angle autolink": "<http://evil.example/x>",
  "email autolink": "mail evil@evil.example",
  "table break": "a | b | c\n| --- |\nnext",
  newlines: "line one\n\n# heading\n- list\n> quote",
  backticks: "``` evil ``` and ` a `",
  emphasis: "**bold** _it_ ~~strike~~ $x^2$",
  "mermaid break": 'x"]\n  line [1, 2]\nclick A "http://evil.example"',
  entities: "&lt;img src=x&gt; &amp;",
};

function evilTask(payload: string): TaskReview {
  const base = passedTask(
    payload,
    [
      timing(payload, 1, 0.8),
      timing("8192x8192", 1, 0.8, {
        evolved: { medianMs: 0.6, p20Ms: 0.59, p80Ms: 0.61 },
      }),
    ],
    {
      optimize: optimizeResult({
        verdict: payload,
        task: { name: payload, format: "native", path: payload },
        run: { ...optimizeResult().run, proposer: payload },
        win: false,
      }),
    },
  );
  return { ...base, task: { ...base.task, path: payload } };
}

function evilWrong(payload: string): TaskReview {
  const task = wrongTask(payload);
  const verification = task.verification;
  if (verification === null || verification.failed === null) throw new Error("fixture");
  return {
    ...task,
    task: { ...task.task, path: payload },
    verification: {
      ...verification,
      reason: payload,
      message: payload,
      failed: { ...verification.failed, config: payload, output: payload },
      configs: verification.configs.map((config) => ({ ...config, name: payload })),
    },
  };
}

function evilError(payload: string): TaskReview {
  const task = compileErrorTask(payload);
  if (task.verification === null) throw new Error("fixture");
  return {
    ...task,
    summary: payload,
    verification: { ...task.verification, reason: payload, message: payload },
  };
}

function evilReview(payload: string) {
  return review([evilTask(payload), evilWrong(payload), evilError(payload)], {
    device: {
      gpu: payload,
      driver: payload,
      cuda: payload,
      torch: payload,
      python: payload,
      evokernel: payload,
    },
  });
}

/** Every token of a GFM parse, nested ones included. */
function tokens(markdown: string): Token[] {
  const all: Token[] = [];
  // walkTokens returns the callbacks' values; ours returns nothing.
  void marked.walkTokens(marked.lexer(markdown, { gfm: true }), (token) => {
    all.push(token);
  });
  return all;
}

/** Our own markup: the hidden marker, <details>/<summary> around fixed words, <sub>. */
const OWN_HTML =
  /^(?:<!-- evokernel:[a-z]+ -->|<details><summary>[^<]*<\/summary>|<\/details>|<\/?sub>)\s*$/;

const OWN_EMPHASIS =
  /^(?:Verification:|Evolved:|If applied:|What you can do|[\d.]+×(?:\u00A0(?:faster|slower))?|vs base|% of floor)$/;

/** What GitHub links after rendering: @name, #123, owner/repo#123. */
const REFERENCE = /(?:^|[^\p{L}\p{N}_`])[@#][\p{L}\p{N}_]/u;

function assertInert(markdown: string, headings: number): void {
  const all = tokens(markdown);
  for (const token of all) {
    if (token.type === "link" || token.type === "image") {
      expect((token as Tokens.Link).href, markdown).toBe(RUN_URL);
    }
    if (token.type === "html") {
      expect((token as Tokens.HTML).raw.trim(), markdown).toMatch(OWN_HTML);
    }
    const leaf = !("tokens" in token) || (token.tokens ?? []).length === 0;
    if ((token.type === "text" || token.type === "escape") && leaf) {
      // Text inside a code span or block is never linked by GitHub; plain text must not mention.
      expect((token as Tokens.Text).text, markdown).not.toMatch(REFERENCE);
    }
    if (token.type === "strong" || token.type === "em" || token.type === "del") {
      // Ours: "**Verification:**", "**Evolved:**", "**1.25×**", "**−20 %**", table notes.
      expect((token as Tokens.Strong).text, markdown).toMatch(OWN_EMPHASIS);
    }
    if (token.type === "code" && (token as Tokens.Code).lang === "mermaid") {
      for (const line of (token as Tokens.Code).text.split("\n")) {
        expect(line, line).toMatch(
          /^(?:xychart-beta|\s+title "[^"\n]*"|\s+[xy]-axis "[^"]*" -?[\d.]+ --> -?[\d.]+|\s+line \[[-\d., ]*\])$/,
        );
      }
    }
  }
  expect(all.filter((token) => token.type === "heading")).toHaveLength(headings);
  for (const table of all.filter((token): token is Tokens.Table => token.type === "table")) {
    for (const row of table.rows) expect(row).toHaveLength(table.header.length);
  }
}

describe("untrusted strings in what evokernel posts", () => {
  for (const [name, payload] of Object.entries(PAYLOADS)) {
    it(`the PR comment: ${name}`, () => {
      const comment = renderComment(evilReview(payload), { runUrl: RUN_URL });
      // The first line's heading, and one per task.
      assertInert(comment, 4);
      // Every row of the timing table stays one row: the payload's configuration and 8192x8192.
      const tables = tokens(comment).filter(
        (token): token is Tokens.Table => token.type === "table",
      );
      expect(tables[0]?.rows).toHaveLength(2);
      // The task's heading (after its icon) names it whole, in one code span.
      const heading = tokens(comment).find(
        (token): token is Tokens.Heading => token.type === "heading" && token.depth === 4,
      );
      expect(heading?.tokens[1]).toMatchObject({
        type: "codespan",
        text: payload.replace(/[\r\n]+/g, " "),
      });
    });

    it(`the check run: ${name}`, () => {
      const output = renderCheckRun(evilReview(payload), 3);
      assertInert(output.summary, 0);
      // one section per task: the timed one's table or what failed, and its reproduction lines
      assertInert(output.text ?? "", 3);
      // A title is plain text: the name as it is, no escapes showing.
      const single = renderCheckRun(review([evilWrong(payload)]), 3);
      expect(single.title).toContain(payload.replace(/[\r\n]+/g, " ").slice(0, 20));
    });

    it(`the nightly pull request and drift issue: ${name}`, () => {
      const spread = { medianMs: 1, p20Ms: 0.99, p80Ms: 1.01 };
      const proposal: Proposal = {
        task: payload,
        path: payload,
        hash: "0123456789abcdef",
        beforeMs: 0.5,
        afterMs: 0.4,
        speedup: 1.25,
        lowerBound: 1.2,
        eager: 5,
        compile: 3.75,
        night: payload,
        source: "",
      };
      const drift: Drift = {
        task: payload,
        config: payload,
        kind: "kernel-slower",
        before: { kernel: spread, compile: spread },
        now: { kernel: { ...spread, medianMs: 2 }, compile: spread },
      };
      const night: Night = {
        at: payload,
        sha: payload,
        runner: { gpu: payload, driver: payload, cuda: null, torch: payload },
        proposed: [{ task: payload, speedup: 1.1 }],
        timed: 1,
        drifted: 1,
        pull: "updated",
      };
      const pull = renderNightlyPull({
        defaultBranch: payload,
        base: payload,
        proposals: [proposal],
        nights: [night],
        drift: [drift],
        runnerChanges: [payload],
        threshold: 3,
        rejected: 0,
        runUrl: RUN_URL,
      });
      assertInert(pull, 1);
      const issue = renderDriftIssue({
        defaultBranch: payload,
        sha: payload,
        at: "2026-11-25T03:00:00Z",
        drift: [drift],
        runnerChanges: [payload],
        runUrl: RUN_URL,
      });
      assertInert(issue, 1);
    });
  }
});

describe("escape helpers", () => {
  it("running text keeps its words as GitHub shows them", () => {
    const html = marked.parseInline(mdText("a_b *c* [d](e) 1.5 x|y"), { gfm: true });
    expect(html).toBe("a_b *c* [d](e) 1.5 x|y");
  });

  it("a code span holds any backtick run and stays one cell", () => {
    const span = codeSpan("a ``` b | c\nd", "cell");
    const table = marked.lexer(`| x |\n|---|\n| ${span} |`, { gfm: true })[0] as Tokens.Table;
    expect(table.rows[0]?.[0]?.tokens[0]).toMatchObject({
      type: "codespan",
      text: "a ``` b | c d",
    });
  });

  it("a code block holds any backtick run: a runner's output cannot close it", () => {
    const tail = "error\n```\n@everyone [x](http://evil.example)\n````\nmore";
    const parsed = marked.lexer(`before\n\n${codeBlock(tail, "")}\n\nafter`, { gfm: true });
    expect(parsed.filter((token) => token.type === "code")).toEqual([
      expect.objectContaining({ text: tail }),
    ]);
  });

  it("html text has no tag and no mention", () => {
    expect(htmlText('<b>"x"</b> @me')).toBe("&lt;b&gt;&quot;x&quot;&lt;/b&gt; @\u200Dme");
  });

  it("mermaid labels cannot close their quotes or brackets", () => {
    expect(mermaidLabel('a"] b\nc')).toBe("a b c");
  });

  it("only http(s) addresses make links", () => {
    expect(safeUrl("javascript:alert(1)")).toBeNull();
    expect(safeUrl("https://x.example/a b)")).toBe("https://x.example/a%20b%29");
  });
});
