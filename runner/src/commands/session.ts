// One fork server per command run (torch imported once), and what it says about the machine.
import { EnvironmentError } from "../errors.js";
import { ForkServer, device } from "../harness/client.js";
import type { DeviceRecord } from "../harness/records.js";
import { gpuPossible } from "../gpu/presence.js";

export const NO_GPU =
  "no CUDA GPU on this machine: verification and timing need one " +
  "(run on a GPU runner; `evokernel tasks` and static checks work here)";

export type Session = { server: ForkServer; device: DeviceRecord };

export type SessionOptions = {
  /** Refuse at once, before torch is imported, where no NVIDIA driver is visible. */
  needGpu?: boolean;
  /** Where the line that says the harness is starting goes (stderr). */
  say?: (line: string) => void;
};

/** Runs `work` with a fork server open, and closes it however the work ends. */
export async function withSession<T>(
  work: (session: Session) => Promise<T>,
  options: SessionOptions = {},
): Promise<T> {
  if (options.needGpu === true && !gpuPossible()) throw new EnvironmentError(NO_GPU);
  options.say?.("starting the harness: Python imports torch (10–30 s) …");
  const server = new ForkServer();
  try {
    const record = await device({ runner: server.run });
    return await work({ server, device: record });
  } finally {
    await server.close();
  }
}

export function requireGpu(session: Session): void {
  if (!session.device.cuda) throw new EnvironmentError(NO_GPU);
}
