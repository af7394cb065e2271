#!/usr/bin/env node
// Stands in for `evokernel job --spec SPEC --out RESULT` in the app's end-to-end test: checks
// that it runs in a checkout of the job's commit with none of the app's secrets, then writes
// the recorded ReviewResult (EVOKERNEL_FAKE_RESULT) with the job it was given.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";

const args = process.argv.slice(2);
const spec = JSON.parse(readFileSync(args[args.indexOf("--spec") + 1], "utf8"));
const out = args[args.indexOf("--out") + 1];
for (const secret of ["PRIVATE_KEY", "WEBHOOK_SECRET", "APP_ID"]) {
  if (process.env[secret] !== undefined) {
    console.error(`the runner was given ${secret}`);
    process.exit(4);
  }
}
const head = execFileSync("git", ["rev-parse", "HEAD"], { encoding: "utf8" }).trim();
if (head !== spec.sha) {
  console.error(`checkout is at ${head}, the job is for ${spec.sha}`);
  process.exit(4);
}
const result = JSON.parse(readFileSync(process.env.EVOKERNEL_FAKE_RESULT, "utf8"));
result.job = spec;
writeFileSync(out, JSON.stringify(result));
