#!/usr/bin/env node
// A stand-in for `python -m evokernel_harness` on a machine with torch but no CUDA GPU: it
// describes the device and nothing else (commands that need a GPU stop before asking more).
import { writeFileSync } from "node:fs";
import { createInterface } from "node:readline";

const device = {
  schema: 1,
  kind: "device",
  cuda: false,
  device: {
    name: "cpu",
    backend: "cpu",
    driver: null,
    torch: "2.11.0",
    cuda: null,
    sms: null,
    l2Bytes: null,
    smClockMHz: null,
    python: "3.12.3",
  },
};

function run(argv) {
  if (argv[0] !== "device") process.exit(4);
  writeFileSync(argv[argv.indexOf("--out") + 1], JSON.stringify(device));
}

const [flag, module, ...argv] = process.argv.slice(2);
if (flag !== "-m" || module !== "evokernel_harness") process.exit(2);
if (argv[0] === "serve") {
  console.log(JSON.stringify({ ready: true, pid: process.pid }));
  createInterface({ input: process.stdin }).on("line", (line) => {
    const request = JSON.parse(line);
    run(request.argv);
    const answer = {
      id: request.id,
      exit: 0,
      signal: null,
      seconds: 0.01,
      timedOut: false,
      memKilled: false,
      log: "",
    };
    console.log(JSON.stringify(answer));
  });
} else {
  run(argv);
}
