"""The transfer engine cut in two, one per pipe that issue #33 runs at once: :class:`GmToUbEngine` (TLOAD,
MGATHER: the GM -> UB pipe, Ascend's MTE2) and :class:`UbToGmEngine` (TSTORE: UB -> GM, MTE3).

Each is :class:`rtl.engines.transfer.engine.TransferEngine` with the other direction's sections left out (its
setup decodes become constants): same timing constants, cycle model and behaviour. They use different AXI
channels (AR / R and AW / W / B), so a unit with both needs no AXI arbitration, and each has its own UB read
port (MGATHER's index reads; TSTORE's UB reader). Not registered in ``rtl.top.ENGINES`` yet: the unit runs one
instruction at a time and keeps the single :class:`TransferEngine`, whose two directions share their setup and
walkers (docs/architecture.md, "Pipes and footprints")."""

from rtl.engines.transfer.engine import TransferEngine
from rtl.isa import Opcode

__all__ = ["GmToUbEngine", "UbToGmEngine"]


class GmToUbEngine(TransferEngine):
    """TLOAD and MGATHER (GM -> UB) alone: :class:`TransferEngine` without the UB reader and the W / B side.

    Ports: as :class:`TransferEngine`; ``ub_rd`` carries MGATHER's index reads only, and of ``axi`` only AR / R
    are driven (``awvalid``, ``wvalid`` and ``bready`` stay low); with ``overlap=True`` also ``release``.
    Latency and throughput: as :class:`TransferEngine` for its instructions.

    Overlap (``OVERLAP``; the concurrent unit builds it with ``overlap=True``): it takes the next TLOAD or
    MGATHER once the running one's lines are all formed (a TLOAD's line walkers have emitted their last lines,
    an MGATHER's ``IndexLines`` has queued its last line), and answers the older one when its last UB word is
    written (:mod:`rtl.engines.transfer.load_overlap`): two instructions in flight at most, of any of its
    opcodes in any order."""

    name = "gm_to_ub"
    opcodes = (Opcode.TLOAD, Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM)
    OVERLAP = True


class UbToGmEngine(TransferEngine):
    """TSTORE (UB -> GM) alone: :class:`TransferEngine` without MGATHER's index lines, the R beat buffer,
    the realigner and the element placer, and without the UB write port.

    Ports: as :class:`TransferEngine` but no ``ub_wr``; ``ub_rd`` is the UB reader's; of ``axi`` only AW / W /
    B are driven (``arvalid`` and ``rready`` stay low); with ``overlap=True`` also ``release``. Latency and
    throughput: as :class:`TransferEngine` for TSTORE.

    Overlap (``OVERLAP``; the concurrent unit builds it with ``overlap=True``): it takes the next TSTORE once
    the running one's line walkers have emitted their last lines, and answers the older one when its last B
    response is in (:mod:`rtl.engines.transfer.store_overlap`): two TSTOREs in flight at most."""

    name = "ub_to_gm"
    opcodes = (Opcode.TSTORE,)
    UB_WRITE = False
    OVERLAP = True
