// Whether this machine can have a CUDA GPU at all, answered in a millisecond from the
// driver's device files, before Python imports torch (10–30 s) only to say there is none.
import { existsSync } from "node:fs";

/** Files one of which every machine with a usable NVIDIA GPU has (WSL2: /dev/dxg). */
const DRIVER_FILES = ["/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia/version", "/dev/dxg"];

/** False only when no NVIDIA driver is visible here; true does not promise a GPU (torch decides). */
export function gpuPossible(exists: (path: string) => boolean = existsSync): boolean {
  return DRIVER_FILES.some((path) => exists(path));
}
