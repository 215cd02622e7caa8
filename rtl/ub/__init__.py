"""The unified buffer and the stream parts through which engines use it.

* :mod:`rtl.ub.buffer`: :class:`UnifiedBuffer` (two banks of words, byte-granular writes, every read port
  a 2-word window), its port signatures and the read-window helpers;
* :mod:`rtl.ub.reader`: :class:`UbReader`, UB lines as a stream of words realigned for their destination;
* :mod:`rtl.ub.writer`: :class:`UbWriter`, a stream of words written into lines with exact byte enables;
* :mod:`rtl.ub.write_arbiter`: :class:`UbWriteArbiter`, the write port shared by several writers (built
  alone, not yet in the unit);
* :mod:`rtl.ub.byteshift`: ``select_bytes``, n bytes at a run-time offset of a wider window.
"""
