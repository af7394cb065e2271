// What a proposal is told about the task: its reference, its visible configurations and the
// machine. Held-out configurations are left out here, once: they exist to catch kernels
// fitted to the shapes they were shown.
import type { Device, TaskInfo } from "#shared/contract/records.js";
import type { ProposalContext } from "./types.js";

export function proposalTask(
  info: TaskInfo,
  reference: string,
  format: ProposalContext["task"]["format"],
  device: Device,
): ProposalContext["task"] {
  return {
    name: info.name,
    reference,
    visibleConfigs: info.configs
      .filter((config) => !config.heldout)
      .map((config) => ({
        name: config.name,
        dims: { ...config.dims },
        shapes: config.inputs.map((input) => [...input.shape]),
      })),
    format,
    gpu: device.name,
    cuda: device.cuda ?? "none",
  };
}
