// The menu of optimisations shown to a proposal (shared/notes/evolution.md, "the traverse
// menu"): a reminder of what exists, not a plan.
export const TECHNIQUES = `Memory: coalesced access; vectorised 16-byte loads and stores; shared-memory tiling;
bank-conflict padding or swizzling; register tiling; double buffering, cp.async, TMA on
Hopper; grid rasterisation for L2 reuse.
Compute: tensor cores (WMMA, mma.sync, wgmma on sm_90a) with fp32 accumulators where the
task's dtype allows; unrolling; software pipelining; split-K; warp shuffles for reductions;
online softmax.
Scheduling: block size and occupancy (__launch_bounds__), persistent kernels, warp
specialisation, thread-block clusters.
Fusion: epilogues (bias, activation, scale, cast) in the kernel; fewer passes over memory.
Never lower the precision of the computation, and compute every output on every call.`;
