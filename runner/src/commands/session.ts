// One fork server per command run (torch imported once), and what it says about the machine.
import { EnvironmentError } from "../errors.js";
import { ForkServer, device } from "../harness/client.js";
import type { DeviceRecord } from "../harness/records.js";

export const NO_GPU =
  "no CUDA GPU on this machine: verification and timing need one " +
  "(run on a GPU runner; `evokernel tasks` and static checks work here)";

export type Session = { server: ForkServer; device: DeviceRecord };

/** Runs `work` with a fork server open, and closes it however the work ends. */
export async function withSession<T>(work: (session: Session) => Promise<T>): Promise<T> {
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
