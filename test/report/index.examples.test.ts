// docs/examples are what the renderers write today (npm run examples), and read as GitHub
// renders them: tables keep their columns, mermaid stays a code block GitHub draws.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { marked, type Token, type Tokens } from "marked";
import { describe, expect, it } from "vitest";
import { repo } from "../helpers/cli.js";
import { examples } from "../helpers/review-examples.js";

describe("docs/examples", () => {
  for (const [name, text] of Object.entries(examples())) {
    it(`${name} is current (npm run examples writes it)`, async () => {
      expect(await readFile(join(repo, "docs", "examples", name), "utf8")).toBe(text);
    });

    it(`${name} renders as GFM: every table row whole, charts as mermaid blocks`, () => {
      const all: Token[] = [];
      void marked.walkTokens(marked.lexer(text, { gfm: true }), (token) => {
        all.push(token);
      });
      for (const table of all.filter((token): token is Tokens.Table => token.type === "table")) {
        for (const row of table.rows) expect(row).toHaveLength(table.header.length);
      }
      const mermaid = all.filter(
        (token): token is Tokens.Code => token.type === "code" && token.lang === "mermaid",
      );
      for (const chart of mermaid) expect(chart.text.startsWith("xychart-beta")).toBe(true);
      expect(text).not.toContain("±");
      expect(text).not.toContain("output output");
    });

    it(`${name} as HTML, the way GitHub's GFM renders it (mermaid left as code)`, () => {
      expect(marked.parse(text, { gfm: true, async: false })).toMatchSnapshot();
    });
  }
});
