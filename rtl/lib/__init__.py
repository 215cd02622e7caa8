"""Small shared RTL parts that know nothing of any engine: bus signatures (:mod:`rtl.lib.axi`), tile
descriptor decode (:mod:`rtl.lib.tile`), FIFOs and queues (:mod:`rtl.lib.fifo`, :mod:`rtl.lib.flag_fifo`)
and register copies against fan-out (:mod:`rtl.lib.fanout`)."""
