// A stand-in for `python -m evokernel_harness serve`, speaking the same line protocol. What
// it does with a request ({id, request: {command, task}, timeoutS}) depends on the first word
// of its task. Like the real server it says `started` before it runs a request, then:
// "ok" answers, "die" exits without answering (the request's child killed the server),
// "hang" never answers, "noise" prints a non-protocol line first, "echo" answers with the
// request line as its log, "queued MS" waits MS for the GPU lock (as when another process
// holds it) before it starts, "locked FILE" waits for the lock until FILE is there. Two exit before they start (a server that dies as it takes a
// request: its GPU gone, its lock file unreadable): "gone" always, "flaky FILE" the first
// time (it makes FILE), answering once FILE is there.
import { existsSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { clearInterval, setInterval, setTimeout } from "node:timers";

console.log(JSON.stringify({ ready: true, pid: process.pid }));
createInterface({ input: process.stdin }).on("line", (line) => {
  const request = JSON.parse(line);
  const [what, arg] = request.request.task.split(" ");
  if (what === "gone") process.exit(9);
  if (what === "flaky" && !existsSync(arg)) {
    writeFileSync(arg, "died once\n");
    process.exit(9);
  }
  if (what === "queued") {
    // another process holds the GPU for arg ms: "waiting", then "started", then the answer
    console.log(JSON.stringify({ id: request.id, waiting: true }));
    setTimeout(() => {
      console.log(JSON.stringify({ id: request.id, started: true, waitedS: 0.4 }));
      answer(request);
    }, Number(arg));
    return;
  }
  if (what === "locked") {
    // another process holds the GPU until FILE is there
    console.log(JSON.stringify({ id: request.id, waiting: true }));
    const poll = setInterval(() => {
      if (!existsSync(arg)) return;
      clearInterval(poll);
      console.log(JSON.stringify({ id: request.id, started: true, waitedS: 0.1 }));
      answer(request);
    }, 10);
    return;
  }
  console.log(JSON.stringify({ id: request.id, started: true, waitedS: 0 }));
  if (what === "die") process.exit(7);
  if (what === "hang") return;
  if (what === "noise") console.log("warming up the GPU…");
  if (what === "echo") return answer(request, line);
  answer(request);
});

function answer(request, log = undefined) {
  console.log(
    JSON.stringify({
      id: request.id,
      exit: 0,
      signal: null,
      seconds: 0.01,
      timedOut: false,
      memKilled: false,
      log:
        log ??
        `ran ${request.request.command} ${request.request.task} in ${process.pid} with timeout ${request.timeoutS}`,
    }),
  );
}
