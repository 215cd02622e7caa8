"""The engines, one package each, named after the instructions they run; :mod:`rtl.engines.base` holds
the contract every engine meets (``Engine``, ``EngineSignature``). ``rtl.top.ENGINES`` registers them."""
