// Lint rules: typed TypeScript rules for the sources, the tests and the build tools (scripts/),
// plain rules for the JS shims, the test helpers in JS and the lab (lab/).
import js from "@eslint/js";
import tseslint from "typescript-eslint";

// The one module that may start a process.
const SPAWN_MODULE = "src/process/spawn.ts";
const NO_SPAWN = {
  group: ["execa", "execa/*", "child_process", "node:child_process"],
  message: `Processes start in ${SPAWN_MODULE} only (spawnProcess), or through runner/src/harness/exec.ts.`,
};

const NO_APP = {
  group: ["**/src/app/**", "**/src/app"],
  message: "The runner never imports the app: share code through src/shared.",
};

// The runner reaches src/ through package.json's "imports" (#shared/…, #report/…,
// #process/…), which name the layer, never by a path that climbs out of runner/.
const NO_DEEP_SRC = {
  group: ["**/src/shared", "**/src/shared/**", "**/src/report/**", "**/src/process/**"],
  message: "The runner imports src/ as #shared/…, #report/… or #process/… (package.json imports).",
};

const NO_FS = {
  group: ["fs", "fs/*", "node:fs", "node:fs/*"],
  message:
    "The runner's files go through runner/src/workspace/files.ts (or a module in eslint.config.js's FS_EXCEPTIONS).",
};

// What a plain Node script may name without importing it.
const NODE_GLOBALS = {
  process: "readonly",
  console: "readonly",
  URL: "readonly",
  Buffer: "readonly",
  setTimeout: "readonly",
  clearTimeout: "readonly",
};

// The runner's modules that use node:fs themselves, and why it is theirs.
const FS_EXCEPTIONS = {
  "runner/src/paths.ts": "finds the package's own folders and version, synchronously at start",
  "runner/src/sandbox/sandbox.ts": "builds the sandbox: its scratch folder and what it shows",
  "runner/src/gpu/presence.ts": "asks whether an NVIDIA device node exists, before torch loads",
  "runner/src/evolve/archive.ts": "the search's append-only archive, which a resumed run reads",
  "runner/src/harness/sealed.ts":
    "copies built libraries into the folder the sandbox sees read-only, checking what it copies",
  "runner/src/pipeline/session.ts":
    "checks the build cache can be written before the harness starts",
};

export default tseslint.config(
  {
    ignores: [
      "dist/**",
      "node_modules/**",
      "coverage/**",
      ".cache/**",
      ".device/**",
      "runner/harness/**",
      "runner/corpus/**",
      "kernels/**",
      "test/fixtures/**",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
      "no-restricted-syntax": [
        "error",
        { selector: "TSEnumDeclaration", message: "Use a union of string literals, not an enum." },
      ],
    },
  },
  {
    // Processes start in one module (src/process/spawn.ts): each start says what environment
    // the child sees, so the allowlists hold wherever a process starts. (The rules below
    // repeat this pattern: a file's no-restricted-imports is the last block's that matches.)
    files: ["src/**/*.ts", "runner/**/*.ts"],
    ignores: [SPAWN_MODULE],
    rules: { "no-restricted-imports": ["error", { patterns: [NO_SPAWN] }] },
  },
  {
    // The app reaches the runner only through the shared contracts and the pure renderers.
    files: ["src/app/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            NO_SPAWN,
            {
              group: ["**/runner/**", "**/runner", "**/test/**", "**/scripts/**"],
              message:
                "src/app may import src/shared, src/report, src/process and its own files only.",
            },
          ],
        },
      ],
    },
  },
  {
    files: ["runner/**/*.ts"],
    rules: { "no-restricted-imports": ["error", { patterns: [NO_SPAWN, NO_APP, NO_DEEP_SRC] }] },
  },
  {
    // The runner's files enter through runner/src/workspace (tasks read once, candidates,
    // the checkout, artifacts); the modules in FS_EXCEPTIONS keep files of their own.
    files: ["runner/src/**/*.ts"],
    ignores: ["runner/src/workspace/**", ...Object.keys(FS_EXCEPTIONS)],
    rules: {
      "no-restricted-imports": ["error", { patterns: [NO_SPAWN, NO_APP, NO_DEEP_SRC, NO_FS] }],
    },
  },
  {
    // The contracts and renderers both sides import: pure, so the app and the runner (and
    // the snapshots) get the same result; side effects stay at each side's rim.
    files: ["src/shared/**/*.ts", "src/report/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["node:*", "fs", "fs/*", "child_process", "execa"],
              message: "src/shared and src/report stay pure: no files, no processes.",
            },
            {
              group: [
                "**/runner/**",
                "**/runner",
                "**/src/app/**",
                "**/src/app",
                "**/process/**",
                "**/process",
              ],
              message: "src/shared and src/report import only each other (and zod, yaml, diff).",
            },
          ],
        },
      ],
    },
  },
  {
    // The JS shims, the test helpers and the lab (lab/: GPU batches, probes and benchmarks run
    // by hand with a bare `node`, whose output is evidence, not product): the plain rules.
    files: ["**/*.js", "**/*.mjs"],
    ignores: ["scripts/**"],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: {
      parserOptions: { projectService: false },
      globals: NODE_GLOBALS,
    },
  },
  {
    // The build, lint and release tools (npm scripts, CI, the release, the acceptance run):
    // the product's type-checked rules, through scripts/tsconfig.json (allowJs). Only the
    // no-unsafe-* family is off: in plain JavaScript every JSON.parse and every import of
    // dist/ is `any`, so they would flag each use of a value rather than a defect.
    files: ["scripts/**/*.mjs"],
    languageOptions: { globals: NODE_GLOBALS },
    rules: {
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-argument": "off",
      "@typescript-eslint/no-unsafe-call": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-return": "off",
    },
  },
);
