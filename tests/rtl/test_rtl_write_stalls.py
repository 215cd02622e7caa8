"""Every engine that writes the UB waits for the write port (issue #33, "UB ports"; docs/architecture.md, "UB
ports for pipes at once"): a port shared between pipes that run at once refuses words, and the engine
must hold a refused word and offer it again (``rtl.engines.base.EngineSignature``, the ``ub_wr``
handshake).

The engine bench's ``write_stalls`` refuses words in a pseudo-random quarter of the cycles and checks,
every cycle, that a refused word is offered again unchanged; after every command it compares the whole UB
(and the status) with the golden machine. The transfer engine's and LOCAL_GATHER's cases are in their own
test files (``write_stalls``); here the compute engines:

* GEMV holds a result in its reducer until the writer has taken the result's words;
* the elementwise lanes cannot stop: their words wait in an output queue
  (:class:`rtl.lib.output_queue.OutputQueue`) and the combiner fires only with its ``room``.
"""

import random

import pytest

import rtl.engines.elementwise.engine as ew_module
from rtl.config import preset
from rtl.engines.elementwise.engine import ElementwiseEngine
from rtl.engines.gemv.engine import GemvEngine
from cocotb_tests.ew_commands import random_command as ew_command
from rtl_engine_bench import run_engine
from test_rtl_gemv import random_command as gemv_command


@pytest.mark.parametrize("name", ["small", "default"])
def test_gemv_waits_for_the_write_port(name):
    config = preset(name, ub_write_queues=True)
    rng = random.Random(7)
    cmds = [c for c in (gemv_command(rng, config, dims=(1, 3, 5, 9)) for _ in range(16)) if c][:8]
    results = run_engine(config, GemvEngine, cmds, ub_init=rng.randbytes(config.ub_bytes), seed=7,
                         write_stalls=True)
    assert len(results) == len(cmds)


@pytest.mark.parametrize("name,seed", [("small", 7), ("small", 8), ("default", 7),
                                       # (full-word lanes as ``small``'s, on 32-byte words: ``slow``)
                                       pytest.param("fullrate", 9, marks=pytest.mark.slow)])
def test_elementwise_waits_for_the_write_port(name, seed):
    config = preset(name, ub_write_queues=True)
    rng = random.Random(seed)
    cmds = [c for c in (ew_command(rng, config) for _ in range(40)) if c][:10]
    results = run_engine(config, ElementwiseEngine, cmds, ub_init=rng.randbytes(config.ub_bytes), seed=seed,
                         write_stalls=True)
    assert len(results) == len(cmds)


def test_elementwise_without_room_loses_words(monkeypatch):
    """The check above can fail: an output queue that claims room for one word only (``spacing`` so
    large that ``in_flight`` is 1) overflows under the same stalls, and the bench sees the lost words."""
    real = ew_module.OutputQueue

    def one_word_room(shape, depth, latency, spacing=1, passthrough=False):
        return real(shape, 2, latency, spacing=latency, passthrough=passthrough)

    one_word_room.depth_for = real.depth_for
    monkeypatch.setattr(ew_module, "OutputQueue", one_word_room)
    config = preset("small", ub_write_queues=True)
    rng = random.Random(7)
    cmds = [c for c in (ew_command(rng, config) for _ in range(40)) if c][:10]
    with pytest.raises(AssertionError, match="UB differs|not offered again"):
        run_engine(config, ew_module.ElementwiseEngine(config), cmds, ub_init=rng.randbytes(config.ub_bytes),
                   seed=7, write_stalls=True)
