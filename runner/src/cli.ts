#!/usr/bin/env node
// Entry point of the evokernel command (bin/evokernel.js and the esbuild bundle).
import { main } from "./cli/main.js";

let interrupt: AbortController | undefined;

process.exitCode = await main(process.argv.slice(2), {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  stderrIsTTY: process.stderr.isTTY === true,
  cwd: process.cwd(),
  // Asked for by a long command that can stop cleanly: the first Ctrl-C aborts the signal,
  // a second one quits at once. Commands that never ask keep Node's default (quit at once).
  interruptSignal() {
    if (interrupt === undefined) {
      const controller = new AbortController();
      interrupt = controller;
      process.on("SIGINT", () => {
        if (controller.signal.aborted) process.exit(130);
        controller.abort();
        process.stderr.write(
          "\ninterrupted: finishing the work in flight (Ctrl-C again to quit at once)\n",
        );
      });
    }
    return interrupt.signal;
  },
});
