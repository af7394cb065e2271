#!/usr/bin/env node
// Entry point of the evokernel command (bin/evokernel.js and the esbuild bundle).
import { main } from "./cli/main.js";
import { killLiveGroups } from "./harness/exec.js";

let interrupt: AbortController | undefined;

// The harness's children lead process groups of their own (and their sandboxes PID
// namespaces): when the runner is told to stop, or ends, they go with it, so a cancelled
// workflow step or a killed job leaves no fork server or candidate behind.
process.on("exit", killLiveGroups);
for (const signal of ["SIGTERM", "SIGHUP"] as const)
  process.on(signal, () => {
    killLiveGroups();
    process.exit(signal === "SIGTERM" ? 143 : 129);
  });
process.on("SIGINT", () => {
  // A command that can stop cleanly asked for the first Ctrl-C (interruptSignal below).
  if (interrupt !== undefined && !interrupt.signal.aborted) return;
  killLiveGroups();
  process.exit(130);
});

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
        // A second Ctrl-C: the listener above quits (its groups killed).
        if (controller.signal.aborted) return;
        controller.abort();
        process.stderr.write(
          "\ninterrupted: finishing the work in flight (Ctrl-C again to quit at once)\n",
        );
      });
    }
    return interrupt.signal;
  },
});
