"""TLOAD, TSTORE and MGATHER: the engine that moves tiles between global memory (AXI4) and the UB.

* :mod:`.engine`: :class:`TransferEngine` (setup, the AR / AW side, R beats -> UB, UB -> W, completion);
* :mod:`.walker`: the lines of a tile and the AXI bursts of a line;
* :mod:`.realign`: bytes shifted from their GM offset to their UB offset (TLOAD, MGATHER row mode);
* :mod:`.mgather`: MGATHER's index tile turned into GM lines and element runs (``IndexLines``) and its checks;
* :mod:`.placer`: MGATHER element mode's byte crossbar; :mod:`.modulo`: WRAP's ``u mod s`` pipeline.
"""

from rtl.engines.transfer.engine import TransferEngine

__all__ = ["TransferEngine"]
