#!/usr/bin/env node
// Bundles the CLI into one ESM file (dist/evokernel.mjs) that runs with a bare `node`, for
// GPU machines that get no node_modules, and the GitHub App likewise (dist/app.mjs, started
// with `node dist/app.mjs`). The tests bundle through bundleCli and bundleApp too.
import { build } from "esbuild";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));

// CommonJS dependencies call require(), which an ES module does not have.
// The runner imports src/ through package.json's "imports" (#shared/…): from the TypeScript
// sources here, from dist/ where the compiled files run.
const SOURCE_CONDITIONS = ["evokernel-source"];

const requireBanner =
  "import { createRequire as __evkCreateRequire } from 'node:module';" +
  "const require = __evkCreateRequire(import.meta.url);";

const CLI = {
  entryPoints: [`${root}runner/src/cli.ts`],
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  banner: { js: requireBanner },
  conditions: SOURCE_CONDITIONS,
  logLevel: "warning",
};

export async function bundleCli(outfile) {
  await build({ ...CLI, outfile });
  return outfile;
}

/** The installed packages the CLI's bundle holds (`node_modules/…` folders, as the lock names them). */
export async function cliPackages() {
  const { metafile } = await build({
    ...CLI,
    outfile: "evokernel.mjs",
    write: false,
    metafile: true,
  });
  const folders = Object.keys(metafile.inputs).flatMap((input) => {
    const match = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
    return match ? [match[1]] : [];
  });
  return [...new Set(folders)].sort();
}

export async function bundleApp(outfile) {
  await build({
    entryPoints: [`${root}src/app/main.ts`],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    banner: { js: requireBanner },
    conditions: SOURCE_CONDITIONS,
    logLevel: "error",
  });
  return outfile;
}

/** The sandbox's check on a GPU machine (lab/gpu-sandbox.sh), or its start's cost (sandbox-spawn). */
export async function bundleSandboxProbe(outfile, script = "sandbox-probe") {
  await build({
    entryPoints: [`${root}runner/scripts/${script}.ts`],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    banner: { js: requireBanner },
    conditions: SOURCE_CONDITIONS,
    logLevel: "warning",
  });
  return outfile;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await bundleCli(`${root}dist/evokernel.mjs`);
  await bundleSandboxProbe(`${root}dist/sandbox-probe.mjs`);
  await bundleSandboxProbe(`${root}dist/sandbox-spawn.mjs`, "sandbox-spawn");
  await bundleApp(`${root}dist/app.mjs`);
}
