// The config's JSON Schema and the README's option table are written from the zod schema
// (npm run config-docs); this fails when either is stale.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  configJsonSchema,
  renderConfigTable,
  replaceConfigBlock,
  TABLE_END,
  TABLE_START,
} from "../../src/shared/config-docs.js";
import { repo } from "../helpers/cli.js";

const STALE = "stale: run `npm run config-docs` and commit what it writes";

describe("generated config docs", () => {
  it("schema/evokernel-config.schema.json is what the zod schema says", async () => {
    const committed: unknown = JSON.parse(
      await readFile(join(repo, "schema", "evokernel-config.schema.json"), "utf8"),
    );
    expect(committed, STALE).toEqual(configJsonSchema());
  });

  it("the README's option table is what the zod schema says", async () => {
    const readme = await readFile(join(repo, "README.md"), "utf8");
    expect(readme).toContain(TABLE_START);
    expect(readme, STALE).toBe(replaceConfigBlock(readme, renderConfigTable()));
  });

  it("replaces only the marked block", () => {
    const text = `before\n${TABLE_START}\nold\n${TABLE_END}\nafter\n`;
    expect(replaceConfigBlock(text, "new")).toBe(
      `before\n${TABLE_START}\nnew\n${TABLE_END}\nafter\n`,
    );
    expect(replaceConfigBlock("no block", "new")).toBe("no block");
  });
});
