"""Operand sets shared by the test modules."""

import numpy as np


def all_pairs(fmt):
    n = 1 << fmt.width
    a, b = np.meshgrid(np.arange(n, dtype=np.uint64), np.arange(n, dtype=np.uint64), indexing="ij")
    return a.ravel(), b.ravel()


def all_values(fmt):
    return np.arange(1 << fmt.width, dtype=np.uint64)


#: Random pairs per format and operation in the normal test run (the issue asks for >= 10^6).
N_RANDOM = 1_000_000
