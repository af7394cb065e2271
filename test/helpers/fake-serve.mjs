// A stand-in for `python -m evokernel_harness serve`, speaking the same line protocol. What
// it does with a request depends on argv[0]: "ok" answers, "die" exits without answering,
// "hang" never answers, "noise" prints a non-protocol line first.
import { createInterface } from "node:readline";

console.log(JSON.stringify({ ready: true, pid: process.pid }));
createInterface({ input: process.stdin }).on("line", (line) => {
  const request = JSON.parse(line);
  const what = request.argv[0];
  if (what === "die") process.exit(7);
  if (what === "hang") return;
  if (what === "noise") console.log("warming up the GPU…");
  console.log(
    JSON.stringify({
      id: request.id,
      exit: 0,
      signal: null,
      seconds: 0.01,
      timedOut: false,
      memKilled: false,
      log: `ran ${request.argv.join(" ")} in ${process.pid} with timeout ${request.timeoutS}`,
    }),
  );
});
