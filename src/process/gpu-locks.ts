// The GPU locks' files, as the app's local backend (prepareGpuLocks) and a root runner's
// sandbox (allowLocks) make them: the harness's lock of a GPU (gpulock.py) is the file named
// for the first GPU CUDA_VISIBLE_DEVICES lists, a plain file of root's, mode 0644, that every
// uid opens read-only to flock; beside it the gate and the share slots that let verifications
// share the GPU (EVOKERNEL_GPU_SHARE).
import { constants } from "node:fs";
import { join } from "node:path";
import { chmod, chown, lstat, mkdir, open, rm } from "node:fs/promises";

/** The share slots gpulock.py may use for each GPU (its MAX_SHARE). */
export const MAX_GPU_SHARE = 8;

/** The lock file of a GPU and the files beside it (gpulock.py's side_files), by name. */
export function gpuLockFiles(visible: string | undefined): string[] {
  const stem = `gpu-${gpuLockName(visible)}`;
  const slots = Array.from({ length: MAX_GPU_SHARE }, (_, k) => `${stem}.share-${k}`);
  return [`${stem}.lock`, `${stem}.gate`, ...slots];
}

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

/**
 * Makes `path` the GPU locks' folder of root's, mode 0755, with the lock files of root's
 * (gpuLockFiles) for each of `gpus` (names as CUDA_VISIBLE_DEVICES gives them). The app's local backend prepares it so
 * for its EVOKERNEL_GPUS, a root runner for the GPU its sandbox locks: both leave it the same,
 * whichever runs first or at once (on two H200s a root CLI that found the folder before the
 * app's first lock file gave it to its sandbox's user; the app then took it back, and that
 * sandbox could not make its GPU's lock file: exit 4 before the search). A folder of another
 * user's is taken back; one that is a link or a file is refused.
 */
export async function rootLockFolder(path: string, gpus: readonly string[]): Promise<void> {
  await mkdir(path, { recursive: true, mode: 0o755 });
  const info = await lstat(path);
  if (!info.isDirectory())
    throw new Error(
      `${path} is not a folder (a link or a file): the GPU locks cannot be kept there; remove it or point EVOKERNEL_GPU_LOCKS elsewhere`,
    );
  if (info.uid !== 0 || info.gid !== 0) await chown(path, 0, 0);
  if ((info.mode & 0o7777) !== 0o755) await chmod(path, 0o755);
  for (const gpu of gpus)
    for (const name of gpuLockFiles(gpu)) await rootLockFile(join(path, name));
}
