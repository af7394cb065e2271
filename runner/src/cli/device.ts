// evokernel device: what this machine offers the harness.
import { device } from "../harness/client.js";
import { renderDevice } from "../render/device.js";
import { flag, printJson, type Command } from "./command.js";

export const deviceCommand: Command = {
  name: "device",
  usage: `usage: evokernel device [--json]

Shows whether this machine has a CUDA GPU, and its name, driver, SM count, L2 size and
the torch, CUDA and Python versions.

      --json   print the harness's DeviceRecord

exit: 0 (with or without a GPU), 3 no Python with torch, 4 internal error`,
  options: { json: { type: "boolean" } },
  async run(parsed, io) {
    const record = await device();
    if (flag(parsed, "json")) printJson(io, record);
    else io.stdout(`${renderDevice(record)}\n`);
    return 0;
  },
};
