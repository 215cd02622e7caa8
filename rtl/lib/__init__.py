"""Small shared RTL parts that know nothing of any engine: bus signatures (:mod:`rtl.lib.axi`), tile
descriptor decode (:mod:`rtl.lib.tile`), opcode decodes from the table (:mod:`rtl.lib.decode`), FIFOs and
queues (:mod:`rtl.lib.fifo`, :mod:`rtl.lib.flag_fifo`, :mod:`rtl.lib.output_queue`), register copies against fan-out
(:mod:`rtl.lib.fanout`) and the timing contract's checks (:mod:`rtl.lib.contract`)."""
