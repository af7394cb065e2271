// Candidate and task formats (docs/DESIGN.md, "Candidates"), declared once: TypeScript
// imports them, and the harness's tests check its detector against the generated
// runner/harness/evokernel_harness/contract/*.json.
import { z } from "zod";

export const CANDIDATE_FORMATS = ["evk", "torch-ext", "py"] as const;
export const candidateFormatSchema = z.enum(CANDIDATE_FORMATS);
export type CandidateFormat = z.infer<typeof candidateFormatSchema>;

export const TASK_FORMATS = ["native", "kernelbench", "robust-kbench"] as const;
export const taskFormatSchema = z.enum(TASK_FORMATS);
export type TaskFormat = z.infer<typeof taskFormatSchema>;

const EVK_ENTRY = /\bevk_(forward|backward)\s*\(/;
const TORCH_EXTENSION = ["PYBIND11_MODULE", "TORCH_LIBRARY"] as const;

/**
 * The candidate format as the harness detects it (candidates/__init__.py detect_format, held
 * to the same cases by FORMAT_DETECTION_CASES on both sides): a .py file is py; an
 * evk_forward/evk_backward definition is evk, before any extension macro; PYBIND11_MODULE or
 * TORCH_LIBRARY is torch-ext; anything else null (the harness refuses it as a load error).
 */
export function detectCandidateFormat(file: string, source: string): CandidateFormat | null {
  if (file.endsWith(".py")) return "py";
  if (EVK_ENTRY.test(source)) return "evk";
  if (TORCH_EXTENSION.some((macro) => source.includes(macro))) return "torch-ext";
  return null;
}

/** Sources and the format each must be detected as, by this module and by the harness. */
export const FORMAT_DETECTION_CASES: readonly {
  file: string;
  source: string;
  format: CandidateFormat | null;
}[] = [
  { file: "k.py", source: "def forward(x):\n    return x\n", format: "py" },
  { file: "k.py", source: "# PYBIND11_MODULE evk_forward(\n", format: "py" },
  {
    file: "k.cu",
    source:
      '#include <evokernel.h>\nextern "C" int evk_forward(const EvkCall* call) { return 0; }\n',
    format: "evk",
  },
  {
    file: "k.cu",
    source: 'extern "C" int evk_backward (const EvkCall* c) { return 0; }\n',
    format: "evk",
  },
  {
    file: "k.cu",
    source:
      'torch::Tensor forward(torch::Tensor x);\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward); }\n',
    format: "torch-ext",
  },
  // An op registered with the dispatcher only: the harness builds it as an extension.
  {
    file: "k.cu",
    source: 'TORCH_LIBRARY(evk, m) { m.def("forward", &forward); }\n',
    format: "torch-ext",
  },
  // Both: the evk entry point wins, as in the harness.
  {
    file: "k.cu",
    source:
      'extern "C" int evk_forward(const EvkCall* c) { return 0; }\nPYBIND11_MODULE(m, m) {}\n',
    format: "evk",
  },
  { file: "k.cu", source: "__global__ void k(float* x) {}\n", format: null },
];
