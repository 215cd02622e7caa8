"""TLOAD, TSTORE and MGATHER: the engine that moves tiles between global memory (AXI4) and the UB.

* :mod:`.engine`: :class:`TransferEngine`: its timing constants, cycle model and checks, and the sections of
  its elaborate: setup, the line walkers, MGATHER's index lines, then
* :mod:`.address_side`: lines -> bursts -> the AR / AW register, bursts in flight;
* :mod:`.load_path`: GM -> UB: the R beat buffer, the realigner or the element placer, the write queue, the
  UB write port;
* :mod:`.store_path`: UB -> GM: the UB reader on the engine's read port, W, B;
* :mod:`.walker`: the lines of a tile (``LineWalker``) and the AXI bursts of a line (``BurstWalker``);
* :mod:`.realign`: bytes shifted from their GM offset to their UB offset (``Realigner``: TLOAD, MGATHER row mode);
* :mod:`.mgather`: MGATHER's index tile turned into GM lines and element runs (``IndexLines``: its decode,
  geometry, walk and flow control); :mod:`.mgather_runs`: its stages 2a-4 (indices resolved, table
  addresses, the segment queue and its runs, the lines' registers) and the line layouts;
* :mod:`.placer`: MGATHER element mode's byte crossbar (``ElementPlacer``); :mod:`.modulo`: WRAP's
  ``u mod s`` pipeline (``ModuloPipeline``);
* :mod:`.checks`: the checker's TLOAD / TSTORE and MGATHER rules; :mod:`.widths`: widths from the
  descriptor layouts;
* :mod:`.pipes`: the engine cut in two for pipes that run at once (``GmToUbEngine``: TLOAD, MGATHER;
  ``UbToGmEngine``: TSTORE), the same sections with the other direction left out; not in the unit yet.
"""

from rtl.engines.transfer.engine import TransferEngine
from rtl.engines.transfer.pipes import GmToUbEngine, UbToGmEngine

__all__ = ["TransferEngine", "GmToUbEngine", "UbToGmEngine"]
