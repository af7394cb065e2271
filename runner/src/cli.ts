#!/usr/bin/env node
// Entry point of the evokernel command (bin/evokernel.js and the esbuild bundle).
import { main } from "./main.js";

process.exitCode = await main(process.argv.slice(2), {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  stderrIsTTY: process.stderr.isTTY === true,
  cwd: process.cwd(),
});
