"""The transfer engine cut in two (rtl/engines/transfer/pipes.py): :class:`GmToUbEngine` runs TLOAD and
MGATHER, :class:`UbToGmEngine` runs TSTORE, each against the golden machine over the whole UB and a GM window
(rtl_engine_bench, AXI protocol monitor, random stalls), in exactly the cycles :class:`TransferEngine` takes
for the same commands on the same memory model, using only its own AXI channels."""

import random

import pytest

from rtl.config import preset
from rtl.engines.transfer.engine import TransferEngine
from rtl.engines.transfer.pipes import GmToUbEngine, UbToGmEngine
from rtl.isa import DType, DTYPE_BYTES, Opcode, Status

from test_rtl_mgather import OUT, _case, _load_and_gather
from test_rtl_transfer import ProtocolBench, random_transfer

GM_BYTES = 1 << 20


def _transfers(rng, cfg, n):
    """``n`` random TLOAD geometries (tile, GM region at a random ``src``) as in test_rtl_transfer."""
    out = []
    for _ in range(n):
        t, gm = random_transfer(rng, cfg)
        out.append((t, gm(DTYPE_BYTES[t["dtype"]] * rng.randrange(0, 20000))))
    return out


def _run(cls, cfg, seed, commands, gm_init, ub_init=None, windows=(), stall=0.3):
    """``commands`` on a bench of ``cls`` (every one compared with the golden); returns each command's
    cycles and the AXI address channels it used (the slave model logs every AR and AW burst). The slave's
    random stalls come from one generator that its read and write processes share, so which stall lands
    where depends on the simulator's process order: cycles are compared with ``stall=0``."""
    bench = ProtocolBench(cfg, cls, seed=seed, stall=stall, gm_windows=list(windows))
    bench.gm_write(0, gm_init)
    if ub_init is not None:
        bench.ub_write(0, ub_init)

    async def stimulus(b):
        for c in commands:
            if isinstance(c, tuple):                    # an MGATHER case: (idx, t_idx, cmd)
                await _load_and_gather(b, cfg, 0, *c)
            else:
                assert (await b.execute(c)).status == Status.OK

    bench.run(stimulus)
    used = {n for n, log in (("AR", bench.axi.ar), ("AW", bench.axi.aw)) if log}
    return [r.cycles for r in bench.results], used


@pytest.mark.parametrize("seed", [1, 2])
def test_gm_to_ub_engine_equals_transfer_engine(seed):
    cfg = preset("small")
    rng = random.Random(seed)
    gm = bytes(rng.randrange(256) for _ in range(GM_BYTES))
    loads = [{"opcode": Opcode.TLOAD, "dst": t, "gm": g} for t, g in _transfers(rng, cfg, 4)]
    gathers = [_case(rng, cfg, dt) for dt in (DType.FP16, DType.INT8, DType.FP32)]
    commands = loads[:2] + gathers + loads[2:]
    _, used = _run(GmToUbEngine, cfg, seed, commands, gm)             # with random stalls
    split, _ = _run(GmToUbEngine, cfg, seed, commands, gm, stall=0)
    whole, _ = _run(TransferEngine, cfg, seed, commands, gm, stall=0)
    assert split == whole and len(split) == 4 + 2 * 3
    assert used == {"AR"}


@pytest.mark.parametrize("seed", [3, 4])
def test_ub_to_gm_engine_equals_transfer_engine(seed):
    cfg = preset("small")
    rng = random.Random(seed)
    ub = bytes(rng.randrange(256) for _ in range(cfg.ub_bytes))
    stores = [{"opcode": Opcode.TSTORE, "src0": t, "gm": dict(g, base=OUT + g["base"] % 0x40000)}
              for t, g in _transfers(rng, cfg, 5)]
    window = [(OUT, GM_BYTES - OUT)]
    _, used = _run(UbToGmEngine, cfg, seed, stores, bytes(GM_BYTES), ub, window)      # with random stalls
    split, _ = _run(UbToGmEngine, cfg, seed, stores, bytes(GM_BYTES), ub, window, stall=0)
    whole, _ = _run(TransferEngine, cfg, seed, stores, bytes(GM_BYTES), ub, window, stall=0)
    assert split == whole and len(split) == 5
    assert used == {"AW"}


def test_split_engines_signatures():
    """What each half needs of the unit: the load half the UB write port and one read port (MGATHER's
    indices), the store half one read port and no write port; both the AXI master (different channels)."""
    cfg = preset("small")
    load, store = GmToUbEngine(cfg), UbToGmEngine(cfg)
    assert "ub_wr" in load.signature.members and "ub_wr" not in store.signature.members
    assert len(load.ub_rd) == len(store.ub_rd) == 1
    assert set(load.opcodes) | set(store.opcodes) == set(TransferEngine.opcodes)
    assert not set(load.opcodes) & set(store.opcodes)
