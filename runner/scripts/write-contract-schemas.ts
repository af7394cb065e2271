// npm run contract: writes runner/harness/evokernel_harness/contract/*.json from the zod
// contract (src/shared/contract), never by hand; test/shared/contract/contract.test.ts fails on drift.
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { contractFileText, contractJsonSchemas } from "#shared/contract/json-schemas.js";
import { repoRoot } from "../src/paths.js";

const dir = join(repoRoot(), "runner", "harness", "evokernel_harness", "contract");
await mkdir(dir, { recursive: true });
const files = contractJsonSchemas();
// A schema dropped from the contract goes from the folder too (task.schema.json is written by
// `npm run schema`, from runner/src/tasks).
for (const name of await readdir(dir)) {
  if (name.endsWith(".json") && !(name in files) && name !== "task.schema.json") {
    await rm(join(dir, name));
  }
}
for (const [name, value] of Object.entries(files)) {
  await writeFile(join(dir, name), contractFileText(value));
}
console.log(`wrote ${Object.keys(files).length} files to ${dir}`);
