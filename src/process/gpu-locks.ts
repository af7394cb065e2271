// The GPU locks' files, as the app's local backend (prepareGpuLocks) and a root runner's
// sandbox (allowLocks) make them: the harness's lock of a GPU (gpulock.py) is the file named
// for the first GPU CUDA_VISIBLE_DEVICES lists, a plain file of root's, mode 0644, that every
// uid opens read-only to flock.
import { constants } from "node:fs";
import { open, rm } from "node:fs/promises";

/** The name gpulock.py gives the lock of the first GPU CUDA_VISIBLE_DEVICES names ("0" unset). */
export function gpuLockName(visible: string | undefined): string {
  const first = (visible ?? "").split(",")[0]?.trim() || "0";
  return first.replace(/[^A-Za-z0-9_-]/g, "_");
}

/**
 * Makes `file` a lock file of root's, mode 0644: never through a link, and one that is not a
 * plain file of its own (a hard link to another) is replaced.
 */
export async function rootLockFile(file: string): Promise<void> {
  const flags =
    constants.O_RDONLY | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const handle = await open(file, flags, 0o644).catch(() => undefined);
    if (handle !== undefined) {
      try {
        const info = await handle.stat();
        // A plain file of its own (not a hard link to another): kept, so a lock held on it holds.
        if (info.isFile() && info.nlink === 1) {
          if (info.uid !== 0 || info.gid !== 0) await handle.chown(0, 0);
          if ((info.mode & 0o7777) !== 0o644) await handle.chmod(0o644);
          return;
        }
      } finally {
        await handle.close();
      }
    }
    await rm(file, { force: true, recursive: true });
  }
  throw new Error(
    `cannot make the GPU lock file ${file}: remove it, or point EVOKERNEL_GPU_LOCKS elsewhere`,
  );
}
