"""Byte selection from a wider window at a run-time offset, pipelined for area and clock."""

from amaranth import C, Cat, Signal, Value

__all__ = ["select_bytes", "SELECT_LATENCY"]

#: Cycles from ``window`` / ``offset`` to the result of :func:`select_bytes`.
SELECT_LATENCY = 1

#: Offset bits the second (fine) step resolves: an 8:1 multiplexer per output bit.
_FINE_BITS = 3


def select_bytes(m, window, offset, n, *, align=1, name="sel"):
    """Bytes ``offset .. offset + n - 1`` of ``window`` (byte ``i`` = bits ``8 i .. 8 i + 7``), valid
    :data:`SELECT_LATENCY` cycle after ``window`` and ``offset``: the value to use in that cycle.

    ``offset`` is a byte offset, a multiple of ``align`` (a power of two; its low bits are ignored);
    the caller guarantees ``offset + n`` bytes lie in ``window``.

    Two steps with a register between (reset-less): the coarse step selects by the offset's high bits
    (multiples of 8 bytes), the fine step by its low 3 bits. On an ECP5 a one-step selection of 32 bytes
    out of 64 maps to a 32:1 multiplexer tree per output bit (~5.5k LUT4 for a 32-byte word: ABC merges
    the stages of a logarithmic shifter); the register between the steps keeps them apart (~1.8k LUT4
    and ~320 flip-flops), and each step is two or three LUT levels, so the selection also keeps the clock.
    """
    window = Value.cast(window)
    offset = Value.cast(offset)
    total = len(window) // 8
    la = align.bit_length() - 1
    bits = max(1, (total - n).bit_length())          # offset bits that matter (offset <= total - n)
    fine = min(_FINE_BITS, bits)
    span = n + (1 << fine) - 1                        # bytes the fine step may need
    if la >= bits:                                    # nothing to select: a plain register
        out = Signal(8 * n, name=f"{name}_q", reset_less=True)
        m.d.sync += out.eq(window[:8 * n])
        return out
    coarse_amt = offset[max(fine, la):bits]
    padded = Cat(window, C(0, 8 * span))              # the coarse step may look past the window's end
    stage = Signal(8 * span, name=f"{name}_coarse", reset_less=True)
    fine_off = Signal(max(1, fine), name=f"{name}_fine", reset_less=True)
    m.d.sync += [stage.eq(padded.bit_select(Cat(C(0, 3 + max(fine, la)), coarse_amt), 8 * span)
                          if bits > max(fine, la) else padded[:8 * span]),
                 fine_off.eq(offset[:fine] if fine else 0)]
    if la >= fine:
        return stage[:8 * n]
    return stage.bit_select(Cat(C(0, 3 + la), fine_off[la:fine]), 8 * n)
