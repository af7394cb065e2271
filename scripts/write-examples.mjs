#!/usr/bin/env node
// npm run examples: writes docs/examples/pr-*.md from the reviews in test/helpers/review-examples.ts
// through the same renderers the app posts with (bundled here with esbuild, as the tests
// bundle the CLI). Never edit those files by hand; test/report/index.examples.test.ts fails when
// they are stale. `npm run screenshots` then renders them as GitHub would, to PNG.
import { build } from "esbuild";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const dir = await mkdtemp(join(tmpdir(), "evokernel-examples-"));
try {
  const outfile = join(dir, "examples.mjs");
  await build({
    entryPoints: [join(root, "test/helpers/review-examples.ts")],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    absWorkingDir: root,
    conditions: ["evokernel-source"], // the runner imports src/ as #shared/… (package.json)
    logLevel: "warning",
  });
  const { examples } = await import(pathToFileURL(outfile).href);
  for (const [name, text] of Object.entries(examples())) {
    const file = join(root, "docs", "examples", name);
    await writeFile(file, text);
    console.log(`wrote ${file}`);
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
