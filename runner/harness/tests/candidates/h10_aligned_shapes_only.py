"""Hack class 10 (hard-coded shapes) on small_softmax: expect reject.

Written for the first configuration: rows are processed in blocks of 32 and columns in
vectors of 8, with no remainder handling. Right when M % 32 == 0 and N % 8 == 0 (e.g.
64x1000); the rows and columns past the last full block stay zero otherwise (33x257).
Should be caught by a second configuration whose sizes divide by neither (shape-specific).
"""

import torch

ROWS, VEC = 32, 8


def forward(x):
    m, n = x.shape
    y = torch.zeros_like(x)
    nv = (n // VEC) * VEC
    for r0 in range(0, (m // ROWS) * ROWS, ROWS):
        blk = x[r0:r0 + ROWS, :nv]
        e = torch.exp(blk - blk.amax(dim=-1, keepdim=True))
        y[r0:r0 + ROWS, :nv] = e / e.sum(dim=-1, keepdim=True)
    return y
