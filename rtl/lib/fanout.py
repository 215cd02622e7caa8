"""Register copies for fan-out: one value kept in several flip-flops, each driving a share of the
loads. Identical flip-flops (same inputs, same enable, same initial value) are merged by synthesis, so
each helper makes its copies differ in a way that does not change what the loads see."""

from amaranth import *

__all__ = ["select_copies", "variant_copies", "held_copies"]


def select_copies(m, value, n, name):
    """``n`` registered copies of ``value`` (loaded every cycle), for a select that fans out to many
    multiplexers: copy ``k`` stores ``value ^ k`` and is returned decoded (``copy ^ k``: the inversions
    fold into the multiplexers' LUTs). ``n`` is at most ``2 ** len(value)``.

    Known flaw: yosys merges flip-flops bit by bit, so each bit keeps at most two distinct flip-flops
    (``value``'s bit and its inverse), one if no copy inverts it; the copies are fewer than asked for
    (docs/architecture.md, "Timing", rule 8). Not fixed on main because the netlists measured at 100 MHz
    depend on it: with the fix, `default` did not route at seed 1 (docs/synthesis.md, "Ninth session")."""
    n = max(1, min(n, 1 << len(value)))
    out = []
    for k in range(n):
        r = Signal(len(value), name=f"{name}{k}", reset_less=True)
        m.d.sync += r.eq(value ^ k)
        out.append(r ^ k)
    return out


def variant_copies(m, name, d, n):
    """``n`` registers loaded with ``d`` every cycle, for fan-out; copy 0 resets to 0, the others are kept
    apart in synthesis (identical registers would be merged) by their reset / init variant. They can
    differ only in a reset cycle: whatever they feed must not matter then."""
    d = Value.cast(d)
    out = []
    for g in range(n):
        r = Signal(d.shape(), name=f"{name}{g}", init=-1 if g >> 1 else 0, reset_less=bool(g & 1))
        m.d.sync += r.eq(d)
        out.append(r)
    return out


def held_copies(m, value, en, n, name):
    """``n`` registers each loaded with the 1-bit ``value`` when ``en`` (held otherwise), for fan-out.
    Identical flip-flops would be merged by synthesis, so the copies differ in what they store (copy
    ``k`` stores ``value`` inverted for odd ``k``, and is returned re-inverted: the inversion folds into
    its loads' LUTs), in their initial value and in whether they reset; they can differ only until the
    first ``en``, which is before anything reads them."""
    assert n <= 8
    out = []
    for k in range(n):
        r = Signal(name=f"{name}{k}", init=(k >> 1) & 1, reset_less=bool(k >> 2))
        with m.If(en):
            m.d.sync += r.eq(value ^ (k & 1))
        out.append(r ^ (k & 1))
    return out

