// npm run schema: writes task.json's JSON Schema from the zod schema (never by hand), to
// runner/schema/task.schema.json (for editors and users) and to the harness's contract folder,
// where tasks/native.py reads its required fields, defaults and enums from it
// (test/runner/tasks/schema.test.ts fails when either is stale).
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { contractFileText } from "#shared/contract/json-schemas.js";
import { repoRoot } from "../src/paths.js";
import { taskJsonSchema } from "../src/tasks/schema.js";

const files = [
  join(repoRoot(), "runner", "schema", "task.schema.json"),
  join(repoRoot(), "runner", "harness", "evokernel_harness", "contract", "task.schema.json"),
];
for (const file of files) {
  await mkdir(join(file, ".."), { recursive: true });
  await writeFile(file, contractFileText(taskJsonSchema()));
  console.log(`wrote ${file}`);
}
