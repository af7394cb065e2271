// The runner's files: tasks, candidates, the job's checkout and the artifacts a run leaves
// all go through here (eslint lets node:fs into runner/src/workspace and a few modules named
// in eslint.config.js only), so one seam holds every read and write a test may want to see.
import { existsSync } from "node:fs";
import {
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  rename,
  rm,
  stat,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function readText(path: string): Promise<string> {
  return readFile(path, "utf8");
}

export function readBytes(path: string): Promise<Buffer> {
  return readFile(path);
}

let written = 0;

/**
 * Writes a file whose folder exists (see makeFolder), whole or not at all: the data goes to a
 * new file beside it, renamed over it. A reader never sees it half written: the search writes
 * a candidate's source to a file named by its hash while another candidate of the same source
 * (other -D values) is read from it; truncated in place, that read found an empty file ("unknown
 * candidate format") on the H100, 2026-11-26.
 */
export async function writeData(path: string, data: string | Uint8Array): Promise<void> {
  if (await isStream(path)) {
    // `--out /dev/stdout`, /dev/null, a FIFO: written into, never renamed over (as root, a
    // rename over /dev/null left the machine a regular file there)
    await writeFile(path, data);
    return;
  }
  const partial = `${path}.${process.pid}-${(written += 1)}.partial`;
  try {
    await writeFile(partial, data);
    await rename(partial, path);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
}

/** A device, FIFO or socket, or a link to one (/dev/stdout). */
async function isStream(path: string): Promise<boolean> {
  const found = await stat(path).catch(() => undefined);
  return (
    found !== undefined &&
    (found.isCharacterDevice() || found.isFIFO() || found.isSocket() || found.isBlockDevice())
  );
}

/** `mkdir -p`. */
export async function makeFolder(path: string): Promise<void> {
  await mkdir(path, { recursive: true });
}

/** A new empty folder under `parent` (the system's temporary folder unless given). */
export function makeTempFolder(prefix: string, parent = tmpdir()): Promise<string> {
  return mkdtemp(join(parent, prefix));
}

/** `rm -rf`. */
export function removeAll(path: string): Promise<void> {
  return rm(path, { recursive: true, force: true });
}

/** What is at `path` (links followed), or null when nothing is. */
export async function kindOf(path: string): Promise<"file" | "folder" | "other" | null> {
  const info = await stat(path).catch(() => null);
  if (info === null) return null;
  return info.isFile() ? "file" : info.isDirectory() ? "folder" : "other";
}

/** A regular file itself, not a link to one. */
export async function isPlainFile(path: string): Promise<boolean> {
  const info = await lstat(path).catch(() => null);
  return info !== null && info.isFile();
}

/** The entries of a folder (none when it cannot be read). */
export async function listFolder(path: string): Promise<{ name: string; folder: boolean }[]> {
  const entries = await readdir(path, { withFileTypes: true }).catch(() => []);
  return entries.map((entry) => ({ name: entry.name, folder: entry.isDirectory() }));
}

/** Whether anything is at `path`, asked synchronously (defaults chosen before any await). */
export function existsNow(path: string): boolean {
  return existsSync(path);
}
