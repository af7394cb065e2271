// The artifact reader: fflate's streaming unzip under caps on entries, entry size, total size
// and ratio. Each cap has a case that a reader without it would accept.
import { describe, expect, it } from "vitest";
import { ARTIFACT_LIMITS } from "../../src/app/input-limits.js";
import { chunksOf, unzipBounded, ZipError } from "../../src/app/zip.js";
import { zipBomb } from "../helpers/zip-bomb.js";
import { writeZip } from "../helpers/zip-writer.js";

const read = (zip: Buffer, limits = ARTIFACT_LIMITS) => unzipBounded(chunksOf(zip), limits);

describe("unzipBounded", () => {
  it("reads deflated and stored entries, keeping only those asked for", async () => {
    const body = JSON.stringify({ a: 1 }).repeat(100);
    expect(await read(writeZip({ "result.json": body, "dir/x.txt": "x" }))).toEqual([
      { name: "result.json", data: Buffer.from(body) },
      { name: "dir/x.txt", data: Buffer.from("x") },
    ]);
    expect((await read(writeZip({ "r.json": "{}" }, "store")))[0]?.data.toString()).toBe("{}");
    const kept = await unzipBounded(
      chunksOf(writeZip({ "a.json": "{}", "log.txt": "x".repeat(1000) })),
      ARTIFACT_LIMITS,
      (name) => name.endsWith(".json"),
    );
    expect(kept.map((entry) => entry.name)).toEqual(["a.json"]);
  });

  it("refuses what is not a zip, is empty, truncated or damaged", async () => {
    await expect(read(Buffer.from("not a zip at all, just some bytes here"))).rejects.toThrow(
      ZipError,
    );
    await expect(read(Buffer.alloc(0))).rejects.toThrow(/empty/);
    const zip = writeZip({ "r.json": "{}".repeat(5000) });
    await expect(read(zip.subarray(0, 60))).rejects.toThrow(ZipError);
    const damaged = Buffer.from(zip);
    damaged.fill(0xff, 40, 80);
    await expect(read(damaged)).rejects.toThrow(ZipError);
  });

  it("stops a zip bomb (256 MiB of zeros in a quarter MB whose header says 100 bytes) early", async () => {
    const bomb = await zipBomb(256);
    expect(bomb.length).toBeLessThan(512 * 1024);
    // The source keeps offering bytes after the bomb: the reader must stop pulling them.
    let pulled = 0;
    function* source() {
      for (const chunk of chunksOf(bomb)) {
        pulled += chunk.length;
        yield chunk;
      }
      for (;;) {
        pulled += 65536;
        yield Buffer.alloc(65536);
      }
    }
    const before = process.memoryUsage().arrayBuffers;
    const error = await unzipBounded(source(), ARTIFACT_LIMITS).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ZipError);
    expect(String(error)).toMatch(/times its size/);
    expect(pulled).toBeLessThanOrEqual(bomb.length);
    // Refused within about a megabyte of the ratio check (after 1 MiB), not a 16 MB push past
    // it: input is fed in pieces that cannot inflate much further than the cap.
    expect((error as ZipError).inflated).toBeGreaterThan(1024 * 1024);
    expect((error as ZipError).inflated).toBeLessThan(3 * 1024 * 1024);
    // Nothing near the bomb's size was held (a generous bound on a shared machine).
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(64 * 1024 * 1024);
  });

  it("caps the total, one entry's size and the number of entries", async () => {
    const loose = { ...ARTIFACT_LIMITS, ratio: 1e9 };
    await expect(read(await zipBomb(80), loose)).rejects.toThrow(/inflates past the 33554432/);
    await expect(read(await zipBomb(80), { ...loose, entryBytes: 1e9 })).rejects.toThrow(
      /archive inflates past the 67108864/,
    );
    const honest = writeZip({ "big.json": Buffer.alloc(2 * 1024 * 1024) });
    await expect(read(honest, { ...loose, entryBytes: 1024 * 1024 })).rejects.toThrow(
      /big.json is 2097152 bytes/,
    );
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`f${i}.txt`, "x"]));
    await expect(read(writeZip(many))).rejects.toThrow(/more than 64 entries/);
    expect(
      await read(writeZip(Object.fromEntries(Object.entries(many).slice(0, 64)))),
    ).toHaveLength(64);
  });
});
