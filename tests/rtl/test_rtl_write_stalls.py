"""Which engines can wait for the UB write port (issue #33, "UB ports"; docs/architecture.md, "UB ports for
pipes at once"): a write port shared between pipes that run at once, arbitrated a word at a time, must be
able to say "not now" to a writer.

The experiment: the engine's ``UbWriter`` is replaced by one that refuses words pseudo-randomly (an LFSR
inside: one cycle in four), and the engine runs its usual random commands on the engine bench, which
compares the whole UB with the golden machine after every command.

* GEMV holds a result in its reducer until the writer has taken the result's words: it must stay
  bit-exact under the stalls.
* The elementwise lanes push their results into the writer with no ``ready`` (a fixed pipeline), so words
  offered while the writer refuses them are lost: the bench must see wrong results. This test documents the
  limitation; when the engine gets an output queue with credits it fails, and becomes a test like GEMV's.
"""

import random

import pytest
from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

import rtl.engines.elementwise.engine as ew_module
import rtl.engines.gemv.engine as gemv_module
from rtl.config import preset
from rtl.ub.writer import UbWriter
from cocotb_tests.ew_commands import random_command as ew_command
from rtl_engine_bench import run_engine
from test_rtl_gemv import random_command as gemv_command


class StallingUbWriter(wiring.Component):
    """A :class:`rtl.ub.writer.UbWriter` behind a gate that refuses its words one cycle in four (a
    16-bit LFSR), with the writer's ports."""

    LINE_LATENCY = UbWriter.LINE_LATENCY

    def __init__(self, config):
        self._writer = UbWriter(config)
        self.LineLayout = self._writer.LineLayout
        super().__init__(dict(self._writer.signature.members.items()))

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = w = self._writer
        lfsr = Signal(16, init=0xACE1)
        m.d.sync += lfsr.eq(Cat(lfsr[1:], lfsr[0] ^ lfsr[2] ^ lfsr[3] ^ lfsr[5]))
        grant = lfsr[:2] != 0
        wiring.connect(m, wiring.flipped(self.lines), w.lines)
        m.d.comb += [w.words.payload.eq(self.words.payload), w.words.valid.eq(self.words.valid & grant),
                     self.words.ready.eq(w.words.ready & grant)]
        for name in ("addr", "data", "be"):
            m.d.comb += getattr(self.ub_wr, name).eq(getattr(w.ub_wr, name))
        m.d.comb += self.done.eq(w.done)
        return m


def test_gemv_waits_for_the_write_port(monkeypatch):
    monkeypatch.setattr(gemv_module, "UbWriter", StallingUbWriter)
    config = preset("small")
    rng = random.Random(7)
    cmds = [c for c in (gemv_command(rng, config, dims=(1, 3, 5, 9)) for _ in range(16)) if c][:8]
    engine = gemv_module.GemvEngine(config)         # an instance: a design of its own, not the cached one
    results = run_engine(config, engine, cmds, ub_init=rng.randbytes(config.ub_bytes), seed=7)
    assert len(results) == len(cmds)


def test_elementwise_cannot_wait_for_the_write_port(monkeypatch):
    monkeypatch.setattr(ew_module, "UbWriter", StallingUbWriter)
    config = preset("small")
    rng = random.Random(7)
    cmds = [c for c in (ew_command(rng, config) for _ in range(30)) if c][:8]
    engine = ew_module.ElementwiseEngine(config)
    with pytest.raises(AssertionError, match="UB differs"):
        run_engine(config, engine, cmds, ub_init=rng.randbytes(config.ub_bytes), seed=7)
