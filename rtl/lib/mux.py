"""Multiplexers over engines without a priority chain."""

from amaranth import *

__all__ = ["and_or"]


def and_or(choices, width):
    """The value of the chosen one of ``choices`` (``(select, value)`` pairs, at most one select high;
    zero when none is), ``width`` bits: an AND-OR multiplexer of the one-hot selects, no priority chain."""
    out = C(0, width)
    for s, v in choices:
        out = out | (Value.cast(v).as_unsigned() & s.replicate(width))
    return out
