// What `evokernel device` prints: the GPU and the versions around it.
import type { DeviceRecord } from "#shared/contract/records.js";

export function renderDevice(record: DeviceRecord): string {
  const { device: info } = record;
  const lines = [
    `CUDA GPU: ${record.cuda ? info.name : "none"}`,
    ...(record.cuda
      ? [
          `driver:   ${info.driver ?? "?"}`,
          `SMs:      ${info.sms ?? "?"}, L2 ${info.l2Bytes === null ? "?" : `${(info.l2Bytes / 2 ** 20).toFixed(0)} MiB`}, ` +
            `SM clock ${info.smClockMHz ?? "?"} MHz`,
        ]
      : []),
    `torch:    ${info.torch} (CUDA ${info.cuda ?? "none"})`,
    `python:   ${info.python}`,
  ];
  return lines.join("\n");
}
