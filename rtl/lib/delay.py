"""A value through a chain of registers: the one delay line of the engines and the front end."""

from amaranth import *

__all__ = ["delay"]


def delay(m, v, n, name, en=None, reset_less=True):
    """``v`` through ``n`` registers ``<name>_d1`` .. ``<name>_d<n>`` in the ``sync`` domain (clock-enabled
    by ``en`` if given). Reset-less unless the value holds a valid bit: a reset then reaches only what needs
    it (fewer loads on the reset net, free packing)."""
    v = Value.cast(v)
    for i in range(n):
        r = Signal(v.shape(), name=f"{name}_d{i + 1}", reset_less=reset_less)
        if en is None:
            m.d.sync += r.eq(v)
        else:
            with m.If(en):
                m.d.sync += r.eq(v)
        v = r
    return v
