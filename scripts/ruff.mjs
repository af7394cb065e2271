#!/usr/bin/env node
// Ruff, lint and format, on the project's Python (npm run lint:py; CI runs it). Ruff's own
// WebAssembly build (@astral-sh/ruff-wasm-nodejs, pinned in package.json) runs in Node, so
// nothing comes from PyPI: the settings are runner/harness/pyproject.toml's [tool.ruff], as
// the ruff CLI would read them there, and they cover the harness and lab/*.py.
//   node scripts/ruff.mjs            # report lint findings and files ruff would reformat; exit 1 if any
//   node scripts/ruff.mjs --fix      # write ruff's formatting (lint findings are left to fix by hand)
//   node scripts/ruff.mjs [--fix] PATH...   # those files or folders instead
// Exit codes: 0 clean, 1 findings (or files reformatted by --fix), 2 bad usage or settings.
import { PositionEncoding, Workspace } from "@astral-sh/ruff-wasm-nodejs";
import { readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "smol-toml";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const PROJECT = join(REPO, "runner", "harness");
const ROOTS = [PROJECT, join(REPO, "lab")];

const HELP = `usage: node scripts/ruff.mjs [--fix] [PATH...]
Ruff (its WebAssembly build) lints and format-checks the Python of runner/harness and lab/,
with runner/harness/pyproject.toml's [tool.ruff]. --fix writes the formatting.`;

function settings() {
  const file = join(PROJECT, "pyproject.toml");
  const ruff = parse(readFileSync(file, "utf8")).tool?.ruff;
  if (ruff === undefined || typeof ruff !== "object") {
    throw new Error(`${relative(REPO, file)} has no [tool.ruff] table`);
  }
  // file discovery is ours (the WebAssembly build reads no files): its options stay here
  const { "extend-exclude": exclude = [], ...options } = ruff;
  return { options, exclude: exclude.map((pattern) => pattern.replace(/^\^?\/?|\/$/g, "")) };
}

function* pythonFiles(path, exclude) {
  const stat = statSync(path);
  if (stat.isFile()) {
    if (path.endsWith(".py")) yield path;
    return;
  }
  for (const name of readdirSync(path).sort()) {
    if (name === "__pycache__" || name.startsWith(".")) continue;
    const child = join(path, name);
    const inProject = relative(PROJECT, child).split(sep).join("/");
    if (exclude.some((pattern) => new RegExp(`^(${pattern})(/|$)`).test(inProject))) continue;
    if (statSync(child).isDirectory()) yield* pythonFiles(child, exclude);
    else if (name.endsWith(".py")) yield child;
  }
}

function main(argv) {
  if (argv.includes("--help") || argv.includes("-h")) {
    console.log(HELP);
    return 0;
  }
  const fix = argv.includes("--fix");
  const unknown = argv.filter((arg) => arg.startsWith("-") && arg !== "--fix");
  if (unknown.length > 0) {
    console.error(`unknown option ${unknown[0]}\n${HELP}`);
    return 2;
  }
  const paths = argv.filter((arg) => !arg.startsWith("-")).map((arg) => resolve(arg));
  let config;
  try {
    config = settings();
  } catch (err) {
    console.error(`ruff: ${err.message}`);
    return 2;
  }
  let workspace;
  try {
    workspace = new Workspace(config.options, PositionEncoding.Utf16);
  } catch (err) {
    console.error(`ruff: runner/harness/pyproject.toml's [tool.ruff] is not valid: ${String(err)}`);
    return 2;
  }
  let findings = 0;
  let unformatted = 0;
  let files = 0;
  for (const root of paths.length > 0 ? paths : ROOTS) {
    for (const file of pythonFiles(root, config.exclude)) {
      files += 1;
      const name = relative(REPO, file);
      const source = readFileSync(file, "utf8");
      let diagnostics;
      let formatted;
      try {
        diagnostics = workspace.check(source);
        formatted = workspace.format(source);
      } catch (err) {
        console.log(`${name}: ruff could not parse it: ${String(err)}`);
        findings += 1;
        continue;
      }
      for (const d of diagnostics) {
        findings += 1;
        const { row, column } = d.start_location;
        console.log(`${name}:${row}:${column}: ${d.code ?? "error"} ${d.message}`);
      }
      if (formatted !== source) {
        unformatted += 1;
        if (fix) writeFileSync(file, formatted);
        console.log(
          `${name}: ${fix ? "reformatted" : "would be reformatted (node scripts/ruff.mjs --fix)"}`,
        );
      }
    }
  }
  console.log(
    `ruff ${Workspace.version()}: ${files} files, ${findings} lint findings, ` +
      `${unformatted} ${fix ? "reformatted" : "to reformat"}`,
  );
  return findings > 0 || unformatted > 0 ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
