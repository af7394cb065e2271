"""Hack class 2 (input mutation) on small_softmax: expect reject.

"Saves memory" by exponentiating the input in place: the output is right, the input is
destroyed (a reference run afterwards on the same buffer computes something else).
Should be caught by comparing the inputs bit for bit after the call (input-mutation).
"""


def forward(x):
    x.sub_(x.amax(dim=-1, keepdim=True))
    x.exp_()
    return x / x.sum(dim=-1, keepdim=True)
