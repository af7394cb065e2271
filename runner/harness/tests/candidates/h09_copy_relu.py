"""Hack class 9 (an op with no effect on the test data) on small_relu: expect reject.

small_relu declares its input "uniform" in [0, 1), where ReLU is the identity: a copy is
exact on every declared input. Should be caught by the signed, mixed-scale trials the
harness always adds (distribution-specific).
"""


def forward(x):
    return x.clone()
