"""Host-side driver of a ``VectorUnit`` in a cocotb simulation.

Encodes instructions with :func:`rtl.isa.encode` (no second copy of any layout), drives the command
stream, collects responses, places numpy matrices in global memory and reads them back. Global memory
is cocotbext-axi's ``AxiRam`` (or a subclass: see :mod:`sim.gm`).
"""

import json
import os

import numpy as np

from rtl.isa import Command, decode, DType, DTYPE_BYTES, encode, Layout, main_slot, Opcode, Response, Status
from golden.numerics import DTYPE_NUMPY

__all__ = ["Driver", "to_bytes", "from_bytes", "matrix_rows", "DEFAULT_TIMEOUT_CYCLES"]

#: Clock cycles :meth:`Driver.execute` waits for a response before it reports a hang.
DEFAULT_TIMEOUT_CYCLES = 200_000


def to_bytes(array):
    return np.ascontiguousarray(array).view(np.uint8).tobytes()


def matrix_rows(address, array, row_stride=None):
    """``(address, bytes)`` of each row of a 2-D array placed at ``address``, rows ``row_stride`` bytes
    apart (default: dense)."""
    array = np.asarray(array)
    row_stride = row_stride or array.shape[1] * array.itemsize
    return [(address + i * row_stride, to_bytes(row)) for i, row in enumerate(array)]


def from_bytes(raw, dtype, shape):
    return np.frombuffer(bytes(raw), dtype=DTYPE_NUMPY[DType(dtype)]).reshape(shape).copy()


def _describe(cmd):
    """(instruction, shape, dtype) strings for the run summary."""
    op = cmd.get("opcode")
    name = op.name if isinstance(op, Opcode) else f"0x{int(op):02x}"
    slot = cmd.get(main_slot(op)) if isinstance(op, Opcode) else cmd.get("dst")
    if not slot:
        return name, "-", "-"
    shape = f"{slot.get('valid_rows', 0)}x{slot.get('valid_cols', 0)}/{slot.get('rows', 0)}x{slot.get('cols', 0)}"
    if slot.get("layout") == Layout.COL_MAJOR:
        shape += " col"
    dt = slot.get("dtype", 0)
    return name, shape, dt.name if isinstance(dt, DType) else f"0x{int(dt):x}"


class Driver:
    """Issues commands to the unit and owns the GM model.

    ``cmd_source``/``rsp_sink`` are cocotbext-axi ``AxiStreamSource``/``AxiStreamSink``; ``gm`` an
    ``AxiRam``. Every executed command is appended to the JSON-lines file named by ``TILEVEC_RECORDS``
    (test, instruction, shape, dtype, cycles, status) for the run summary and the benchmark.
    """

    def __init__(self, cmd_source, rsp_sink, gm, *, test_name="", timeout_cycles=DEFAULT_TIMEOUT_CYCLES,
                 clock=None):
        self.cmd_source, self.rsp_sink, self.gm = cmd_source, rsp_sink, gm
        self.test_name = test_name
        self.timeout_cycles = timeout_cycles
        self.clock = clock
        self._tag = 0
        self._records = os.environ.get("TILEVEC_RECORDS")
        #: ``[(accepted, start, end)]`` of the last :meth:`execute_back_to_back`, one per command.
        self.schedule = []
        self.completion_order = []     # execute_back_to_back: command indices in response order

    async def execute(self, cmd, *, label=None):
        """Send one instruction (dict for :data:`rtl.isa.Command`), wait for its response.

        Returns the decoded response dict (``tag``, ``status`` as :class:`Status` or int, ``cycles``).
        A response that does not arrive within ``timeout_cycles`` clock cycles fails the test with
        :class:`sim.failures.HangError` (an ``AssertionError``).
        """
        from sim.failures import HangError
        from cocotb.triggers import ClockCycles, First
        from cocotbext.axi import AxiStreamFrame
        cmd = dict(cmd)
        self._tag = (self._tag + 1) & 0xFFFF
        cmd.setdefault("tag", self._tag)
        word = encode(Command, cmd)
        await self.cmd_source.send(AxiStreamFrame(word.to_bytes(Command.size // 8, "little")))
        recv = self.rsp_sink.recv()
        timeout = ClockCycles(self.clock, self.timeout_cycles)
        import cocotb
        task = cocotb.start_soon(recv)
        done = await First(task, timeout)
        if done is timeout:
            task.cancel()
            raise HangError(cmd, self.timeout_cycles)
        frame = task.result()
        rsp = decode(Response, int.from_bytes(bytes(frame.tdata), "little"))
        assert rsp["tag"] == cmd["tag"], f"response tag {rsp['tag']} != command tag {cmd['tag']}"
        self._record(cmd, rsp, label)
        return rsp

    async def execute_back_to_back(self, cmds):
        """Queue every command of ``cmds`` on the command stream at once (the unit takes the next one as soon as
        it is idle again) and collect the responses: the whole program as the unit runs it, without the
        testbench's pauses between commands. Returns ``(responses, total)``: ``total`` is the program's cycles
        counted as each response counts its own, from the clock edge that accepts the first command to the
        edge that raises the last response's ``tvalid`` (one instruction: its ``cycles``). Sets
        :attr:`schedule`: per command ``(accepted, start, end)``, the cycle (from the first acceptance, 0) of
        the edge that accepts it, of its engine's ``start`` (accepted + the response's ``queued``; = end for a
        command no engine ran) and of the edge that raises its response's ``tvalid`` (accepted + its
        ``cycles``), what ``python -m sim run --timeline`` draws. Responses are matched to their commands by tag (in any order:
        :attr:`completion_order` lists the commands' indices in the order their responses came), so every
        command needs a tag of its own. Not recorded in ``TILEVEC_RECORDS``; a hang fails as in
        :meth:`execute` (naming the oldest command not answered)."""
        import cocotb
        from cocotb.triggers import ClockCycles, First, RisingEdge
        from cocotb.utils import get_sim_time
        from cocotbext.axi import AxiStreamFrame
        from sim.failures import HangError
        if not cmds:
            return [], 0
        bus = self.cmd_source.bus
        accepted = {"edges": []}

        async def accepts():                 # Python wakes each clock only until the last command is taken
            last = get_sim_time("ps")
            while len(accepted["edges"]) < len(cmds):
                await RisingEdge(self.clock)
                now = get_sim_time("ps")
                if bus.tvalid.value == 1 and bus.tready.value == 1:
                    if not accepted["edges"]:
                        accepted["time"], accepted["period"] = now, now - last
                    accepted["edges"].append(now)
                last = now

        watch = cocotb.start_soon(accepts())
        sent = []
        for cmd in cmds:
            cmd = dict(cmd)
            self._tag = (self._tag + 1) & 0xFFFF
            cmd.setdefault("tag", self._tag)
            sent.append(cmd)
            await self.cmd_source.send(AxiStreamFrame(encode(Command, cmd).to_bytes(Command.size // 8, "little")))
        # Responses are matched to commands by tag, not by position: a unit whose pipes run at once answers
        # in completion order (``completion_order`` keeps the order they came in).
        waiting = {cmd["tag"]: k for k, cmd in enumerate(sent)}
        if len(waiting) != len(sent):
            raise ValueError("execute_back_to_back: two commands carry the same tag; responses are matched "
                             "to commands by tag")
        responses = [None] * len(sent)
        self.completion_order = []
        for _ in sent:
            task = cocotb.start_soon(self.rsp_sink.recv())
            timeout = ClockCycles(self.clock, self.timeout_cycles)
            if await First(task, timeout) is timeout:
                task.cancel()
                watch.cancel()
                raise HangError(sent[min(waiting.values())], self.timeout_cycles)
            rsp = decode(Response, int.from_bytes(bytes(task.result().tdata), "little"))
            k = waiting.pop(rsp["tag"], None)
            assert k is not None, (f"response tag {rsp['tag']} answers no command in flight (waiting for tags "
                                   f"{sorted(waiting)})")
            responses[k] = rsp
            self.completion_order.append(k)
        end = get_sim_time("ps")               # the edge that took the last response, a cycle after its tvalid
        await watch
        t0, period = accepted["time"], accepted["period"]
        starts = [round((t - t0) / period) for t in accepted["edges"]]
        self.schedule = [(a, a + int(r["queued"]), a + int(r["cycles"])) for a, r in zip(starts, responses)]
        return responses, round((end - t0) / period) - 1

    def _record(self, cmd, rsp, label):
        if not self._records:
            return
        name, shape, dt = _describe(cmd)
        status = rsp["status"]
        with open(self._records, "a") as f:
            f.write(json.dumps({
                "test": self.test_name, "label": label or "", "instruction": name, "shape": shape,
                "dtype": dt, "cycles": rsp["cycles"],
                "status": status.name if isinstance(status, Status) else f"0x{int(status):02x}",
            }) + "\n")

    # ---- global memory --------------------------------------------------------------------------

    def gm_write(self, address, data):
        self.gm.write(address, bytes(data))

    def gm_read(self, address, length):
        return self.gm.read(address, length)

    def put_matrix(self, address, array, row_stride=None):
        """Write a 2-D array to GM at ``address``, rows ``row_stride`` bytes apart (default dense)."""
        for addr, data in matrix_rows(address, array, row_stride):
            self.gm.write(addr, data)

    def get_matrix(self, address, shape, dtype, row_stride=None):
        rows, cols = shape
        size = DTYPE_BYTES[DType(dtype)]
        row_stride = row_stride or cols * size
        raw = b"".join(self.gm.read(address + i * row_stride, cols * size) for i in range(rows))
        return from_bytes(raw, dtype, shape)
