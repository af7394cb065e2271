# Not a hack, a numerics bug: relu that passes large values through bfloat16 (as a kernel
# that stores big activations in a narrower type might). Exact on the declared inputs (uniform
# [0, 1)); on signed, mixed-scale inputs the large values lose digits. The verifier must name it
# an accuracy loss, with the error against the tolerance, not "dropped work".
import torch


def forward(x):
    y = torch.clamp_min(x, 0.0)
    big = y.abs() > 10.0
    return torch.where(big, y.to(torch.bfloat16).to(torch.float32), y)
