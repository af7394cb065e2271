// A zip bomb for the artifact reader's tests: `mib` MiB of zeros deflated (about 1 KB per
// MiB) as one entry whose headers claim 100 bytes, built by streaming so the test itself
// never holds the inflated size.
import { createDeflateRaw } from "node:zlib";
import { writeZip } from "./zip-writer.js";

export async function zipBomb(mib: number): Promise<Buffer> {
  const deflate = createDeflateRaw({ level: 9 });
  const parts: Buffer[] = [];
  deflate.on("data", (chunk: Buffer) => parts.push(chunk));
  const done = new Promise((resolve) => deflate.on("end", resolve));
  const zeros = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < mib; i++) {
    if (!deflate.write(zeros)) await new Promise((resolve) => deflate.once("drain", resolve));
  }
  deflate.end();
  await done;
  return writeZip({}, "deflate", {
    packed: { "evokernel-result.json": { data: Buffer.concat(parts), declaredSize: 100 } },
  });
}
