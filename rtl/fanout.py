"""Register copies for fan-out: one value kept in several flip-flops, each driving a share of the
loads. Identical flip-flops (same inputs, same enable, same initial value) are merged by synthesis, so
each helper makes its copies differ in a way that does not change what the loads see."""

from amaranth import *

__all__ = ["select_copies", "variant_copies", "held_copies"]


#: Copies are kept apart per bit: yosys merges flip-flops bit by bit, so a copy must differ from every
#: other copy in each bit, not only as a whole (storing ``value ^ k`` in copy ``k`` left two flip-flops
#: per bit at most). Copy ``k`` stores its value inverted when bit 0 of ``k`` is set (the inversion folds
#: into its loads' LUTs), reads as ones before its first load when bit 1 is set (zeros otherwise) and
#: resets when bit 2 is set (copies 0-3 have no reset: no load on the reset net): eight variants, any two
#: of which differ in each bit in their input, their initial value or their reset.
MAX_COPIES = 8


def _copies(m, name, d, n, en=None):
    d = Value.cast(d)
    out = []
    for k in range(max(1, min(n, MAX_COPIES))):
        inv, ones, reset_less = bool(k & 1), bool(k & 2), not k & 4
        r = Signal(d.shape(), name=f"{name}{k}", init=-1 if inv != ones else 0, reset_less=reset_less)
        v = ~d if inv else d
        if en is None:
            m.d.sync += r.eq(v)
        else:
            with m.If(en):
                m.d.sync += r.eq(v)
        out.append(~r if inv else r)
    return out


def select_copies(m, value, n, name):
    """``min(n, MAX_COPIES)`` registered copies of ``value`` (loaded every cycle), for a select that fans
    out to many multiplexers, each copy distinct from the others in every bit (see ``MAX_COPIES``). The
    copies can differ from each other only in the cycle after a reset (before their first load):
    whatever they select must not matter then."""
    return _copies(m, name, value, n)


def variant_copies(m, name, d, n):
    """``min(n, MAX_COPIES)`` registers loaded with ``d`` every cycle, for fan-out (the same copies as
    :func:`select_copies`; copy 0 starts at 0). They can differ only in a reset cycle: whatever they
    feed must not matter then."""
    return _copies(m, name, d, n)


def held_copies(m, value, en, n, name):
    """``n`` (at most ``MAX_COPIES``) registers each loaded with the 1-bit ``value`` when ``en`` (held
    otherwise), for fan-out, each distinct from the others (see ``MAX_COPIES``); they can differ only
    until the first ``en``, which is before anything reads them."""
    assert n <= MAX_COPIES
    return _copies(m, name, value, n, en)
