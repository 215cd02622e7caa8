"""What every engine built with ``overlap`` needs for its ``done`` order (the engine contract,
:class:`rtl.engines.base.EngineSignature`: dones in start order): an empty region, which has no words to
mark its end, is done only once no older instruction is in flight."""

from types import SimpleNamespace

from amaranth import *

__all__ = ["empty_done_in_order"]


def empty_done_in_order(m, start, empty, last_taken, empty_done, in_flight):
    """``empty_done`` (a register, driven here) for an engine whose non-empty instructions end with their last
    word taken by the writer (``last_taken``, a pulse per instruction, in start order). ``outstanding``
    counts the instructions started with words (``start`` and not ``empty``) whose last word is not yet taken
    (at most ``in_flight``); an empty one started while it is zero is done the cycle after its ``start``
    (``EMPTY_CYCLES`` = 1, as alone), otherwise it waits (``waiting``) and is done the cycle after
    ``outstanding`` reaches zero. The engine must not take another instruction while one waits (its
    ``release`` reads ``waiting``). Returns ``outstanding`` and ``waiting``."""
    outstanding = Signal(range(in_flight + 1), name="outstanding")
    waiting = Signal(name="empty_waiting")
    m.d.sync += outstanding.eq(outstanding + (start & ~empty) - last_taken)
    clear = outstanding == 0
    m.d.sync += empty_done.eq(((start & empty) | waiting) & clear)
    with m.If(start & empty & ~clear):
        m.d.sync += waiting.eq(1)
    with m.Elif(clear):
        m.d.sync += waiting.eq(0)
    return SimpleNamespace(outstanding=outstanding, waiting=waiting)
