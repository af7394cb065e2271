// npm run schema: writes runner/schema/task.schema.json from the zod schema (never by hand).
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { repoRoot } from "../src/paths.js";
import { taskJsonSchema } from "../src/tasks/schema.js";

const file = join(repoRoot(), "runner", "schema", "task.schema.json");
await mkdir(join(repoRoot(), "runner", "schema"), { recursive: true });
await writeFile(file, `${JSON.stringify(taskJsonSchema(), null, 2)}\n`);
console.log(`wrote ${file}`);
