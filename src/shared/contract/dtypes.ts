// The dtypes and input initialisations, declared once (the harness's env.py and inputs.py
// are checked against the generated JSON Schemas by runner/harness/tests/test_contract.py).
import { z } from "zod";

/** Every dtype the harness names in its records (env.py DTYPES). */
export const DTYPES = [
  "float32",
  "float16",
  "bfloat16",
  "float64",
  "int32",
  "int64",
  "bool",
  "uint8",
  "int8",
] as const;
export const dtypeSchema = z.enum(DTYPES);
export type Dtype = z.infer<typeof dtypeSchema>;

/** The dtypes a native task.json may declare for an input. */
export const TASK_DTYPES = [
  "float32",
  "float16",
  "bfloat16",
  "float64",
  "int32",
  "int64",
  "bool",
] as const satisfies readonly Dtype[];
export const taskDtypeSchema = z.enum(TASK_DTYPES);

/** The floating dtypes (gradients, tolerances, the float64 re-check). */
export const FLOAT_DTYPES = [
  "float32",
  "float16",
  "bfloat16",
  "float64",
] as const satisfies readonly Dtype[];
export const floatDtypeSchema = z.enum(FLOAT_DTYPES);

/** How a configuration's inputs are drawn (inputs.py INITS). */
export const INITS = ["normal", "uniform", "signed-mixed", "positive", "offset"] as const;
export const initSchema = z.enum(INITS);
