#!/usr/bin/env node
// npm run config-docs: writes schema/evokernel-config.schema.json and the README's option
// table (between <!-- config-table:start --> and <!-- config-table:end -->) from the zod
// schema in src/shared/config.ts, compiled by `npm run build` first. Never edit either by hand.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const { configJsonSchema, renderConfigTable, replaceConfigBlock, TABLE_START } = await import(
  `${root}dist/src/shared/config-docs.js`
);

await mkdir(`${root}schema`, { recursive: true });
const schemaFile = `${root}schema/evokernel-config.schema.json`;
await writeFile(schemaFile, `${JSON.stringify(configJsonSchema(), null, 2)}\n`);
console.log(`wrote ${schemaFile}`);

const readmeFile = `${root}README.md`;
const readme = await readFile(readmeFile, "utf8");
if (!readme.includes(TABLE_START)) {
  console.error(`README.md has no ${TABLE_START} block: add one where the table goes`);
  process.exit(1);
}
await writeFile(readmeFile, replaceConfigBlock(readme, renderConfigTable()));
console.log(`wrote the option table in ${readmeFile}`);
