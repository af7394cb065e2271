// Loaded into the app's process by bench-webhooks.mjs (node --import): samples
// process.memoryUsage() every 50 ms and after every full garbage collection and, when the
// process exits, writes to the file named by EVOKERNEL_MEMORY_PROBE the sample taken where
// resident memory peaked, each field's highest value and the most V8's heap held just after
// a full collection (what was alive, not garbage waiting), so a high-water mark can be
// split into live objects, garbage and the buffers outside the heap.
import { writeFileSync } from "node:fs";
import { constants, PerformanceObserver } from "node:perf_hooks";
import { memoryUsage } from "node:process";
import { setInterval } from "node:timers";

const file = process.env.EVOKERNEL_MEMORY_PROBE;
if (file) {
  let atPeak = memoryUsage();
  const highest = { ...atPeak };
  let liveAfterFullGc = 0;
  let fullGcs = 0;
  function sample() {
    const now = memoryUsage();
    if (now.rss > atPeak.rss) atPeak = now;
    for (const key of Object.keys(highest)) highest[key] = Math.max(highest[key], now[key]);
    return now;
  }
  setInterval(sample, 50).unref();
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (entry.detail?.kind !== constants.NODE_PERFORMANCE_GC_MAJOR) continue;
      fullGcs++;
      liveAfterFullGc = Math.max(liveAfterFullGc, sample().heapUsed);
    }
  }).observe({ entryTypes: ["gc"] });
  process.on("exit", () => {
    writeFileSync(file, JSON.stringify({ atPeak, highest, liveAfterFullGc, fullGcs }));
  });
}
