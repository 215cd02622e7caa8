"""GTKWave save files show names, not numbers: translate filter files generated from the design's enums
and FSM states (one source of truth), applied to the matching traces."""

import pytest

from rtl.config import preset
from rtl.isa import DType, Layout, OobMode, Opcode, Status
from sim import waves


@pytest.fixture(scope="module")
def names():
    return waves.signal_names(preset("small"))


def test_enums_and_fsms_are_named(names):
    assert names["vector_unit.\\cmd.opcode"] == {op.value: op.name for op in Opcode}
    assert names["vector_unit.\\cmd.dst.dtype"] == {d.value: d.name for d in DType}
    assert names["vector_unit.\\cmd.src0.layout"] == {l.value: l.name for l in Layout}
    assert names["vector_unit.\\cmd.oob"] == {o.value: o.name for o in OobMode}
    assert names["vector_unit.status"] == {s.value: s.name for s in Status}
    assert set(names["vector_unit.frontend_state"].values()) == {"IDLE", "CHECK", "RUN", "RESPOND"}
    assert set(names["vector_unit.elementwiseengine.fsm_state"].values()) == {"IDLE", "DECODE", "PARAMS", "RUN"}
    assert any(k.startswith("vector_unit.elementwiseengine.lanes") and "LaneOp" not in k and
               set(v.values()) >= {"ADD", "SUB", "MUL", "MAX", "MIN"} for k, v in names.items())


def test_every_member_is_in_its_filter(tmp_path, names):
    mapping = waves.write_filters(preset("small"), tmp_path)
    assert set(mapping) == set(names)
    for ref, values in names.items():
        text = (tmp_path / mapping[ref]).read_text().splitlines()
        width = max(values).bit_length() or 1
        for v, name in values.items():
            assert f"{v:0{max(1, -(-width // 4))}X} {name}" in text, (ref, v, name)


def test_save_file_applies_filters(tmp_path, monkeypatch):
    fst = tmp_path / "run" / "icarus-small" / "t" / "t.fst"
    fst.parent.mkdir(parents=True)
    fst.write_bytes(b"")
    monkeypatch.setattr(waves, "fst_signals", lambda f: [
        ("vector_unit", "clk", 1), ("vector_unit", "status", 8), ("vector_unit", "\\cmd.opcode", 8),
        ("vector_unit", "frontend_state", 2), ("vector_unit", "cycles", 32)])
    out = waves.write_gtkw(fst)
    lines = out.read_text().splitlines()
    for trace in ("vector_unit.status[7:0]", "vector_unit.\\cmd.opcode[7:0]", "vector_unit.frontend_state[1:0]"):
        i = lines.index(trace)
        assert lines[i - 1].startswith("^") and lines[i - 1].split()[1].endswith(".txt"), trace
    i = lines.index("vector_unit.cycles[31:0]")
    assert not lines[i - 1].startswith("^")


def test_save_file_opens_on_the_run_with_named_fields(tmp_path, monkeypatch):
    """Issue #34, point 9: the save file opens on the whole run (the zoom fitted to the FST header's time span),
    the command's 640 bits and the response's 64 are split into their fields by name (opcode and the enums
    through their filters, the tag and the shapes in decimal, bases in hex), the cycle count in decimal.
    (Checked by eye too: a screenshot of GTKWave under Xvfb on ew_BF16, see the issue.)"""
    import struct
    from vcd.gtkw import decode_flags
    from rtl.isa import COMMAND_BITS, RESPONSE_BITS
    fst = tmp_path / "run" / "icarus-small" / "t" / "t.fst"
    fst.parent.mkdir(parents=True)
    fst.write_bytes(bytes([0]) + struct.pack(">QQQ", 329, 0, 62_035_000) + bytes(100))
    assert waves.fst_span(fst) == (0, 62_035_000)
    monkeypatch.setattr(waves, "fst_signals", lambda f: [
        ("vector_unit", "clk", 1), ("vector_unit", "s_axis_cmd__tdata", COMMAND_BITS),
        ("vector_unit", "m_axis_rsp__tdata", RESPONSE_BITS), ("vector_unit", "cycles", 32),
        ("vector_unit", "\\cmd.tag", 16)])
    filters = {f"vector_unit.{ref}": str(tmp_path / f"{kind}.txt") for kind, ref in waves._ENUM_REFS.items()}
    lines = waves.write_gtkw(fst, filters=filters).read_text().splitlines()     # (no elaboration: a second)
    zoom = float(next(l for l in lines if l.startswith("*"))[1:].split()[0])
    assert zoom == pytest.approx(waves.fit_zoom(62_035_000))
    # GTKWave shows 2 ** -zoom time units per 200 pixels: the run fills the waves' width
    assert 2 ** -zoom * waves.WAVE_WIDTH / 200 == pytest.approx(62_035_000)

    def flags_before(i):
        return decode_flags(next(l for l in reversed(lines[:i]) if l.startswith("@"))[1:])

    def field(name):
        i = next(k for k, l in enumerate(lines) if l.startswith(f"#{{{name}}} "))
        return i, lines[i].split()[1:]

    i, bits = field("cmd.opcode")                      # bits 7..0 of tdata[639:0], numbered from the left
    assert bits == [f"({639 - b})vector_unit.s_axis_cmd__tdata[639:0]" for b in range(7, -1, -1)]
    assert lines[i - 1] == f"^1 {tmp_path / 'Opcode.txt'}" and "ftranslated" in flags_before(i)
    i, _ = field("cmd.src2.dtype")
    assert lines[i - 1].endswith("DType.txt") and "ftranslated" in flags_before(i)
    i, _ = field("rsp.status")
    assert lines[i - 1].endswith("Status.txt")
    for name in ("cmd.tag", "cmd.dst.rows", "cmd.dst.valid_cols", "cmd.gm.row_stride", "rsp.tag", "rsp.cycles",
                 "rsp.queued"):
        i, _ = field(name)
        assert "dec" in flags_before(i), name
    for name in ("cmd.src1.base", "cmd.gm.base"):
        i, _ = field(name)
        assert "hex" in flags_before(i), name
    from rtl.isa import Response
    i, bits = field("rsp.cycles")                      # its top bit first, numbered from the left of tdata
    top = Response["cycles"].offset + 31
    assert bits[0] == f"({RESPONSE_BITS - 1 - top})vector_unit.m_axis_rsp__tdata[{RESPONSE_BITS - 1}:0]", bits[0]
    assert len(bits) == 32
    for trace in ("vector_unit.cycles[31:0]", "vector_unit.\\cmd.tag[15:0]"):
        assert "dec" in flags_before(lines.index(trace)), trace


def test_save_file_groups_the_concurrent_front_end(tmp_path, monkeypatch):
    """The concurrent unit's save file has a group with each pipe's running / released / stalled / take / free /
    draining / retire flags, the engines' start and go, the unit's empty and the check stage's fill, speculative
    start and footprints to drop, and one with the stalled-on-hazard counters;
    a serial unit's has neither."""
    fst = tmp_path / "run" / "icarus-small_concurrent" / "t" / "t.fst"
    fst.parent.mkdir(parents=True)
    fst.write_bytes(b"")
    sigs = [("vector_unit", "clk", 1), ("vector_unit", "perf__stalled__0", 32), ("vector_unit", "perf__busy__0", 32),
            ("vector_unit.front", "busy", 4), ("vector_unit.front", "stalled", 4), ("vector_unit.front", "empty", 1),
            ("vector_unit.front", "pipe2_running", 1), ("vector_unit.front", "go_elementwise", 1),
            ("vector_unit.front", "held", 640), ("vector_unit.front.dispatch", "running1", 1),
            ("vector_unit.front.dispatch", "draining2", 1), ("vector_unit.front", "pipe2_free", 1),
            ("vector_unit.front", "pipe2_released", 1), ("vector_unit.front.dispatch", "released2", 1),
            ("vector_unit.front.check_cmds", "level", 3), ("vector_unit.front", "speculate", 1),
            ("vector_unit.front", "drop", 3), ("vector_unit.front.check_cmds", "mem", 673)]
    monkeypatch.setattr(waves, "fst_signals", lambda f: sigs)
    lines = waves.write_gtkw(fst, filters={}).read_text().splitlines()
    start = next(i for i, l in enumerate(lines) if "queues and hazard stalls" in l)
    group = lines[start:next(i for i in range(start + 1, len(lines)) if lines[i].startswith("-"))]
    for trace in ("vector_unit.front.busy[3:0]", "vector_unit.front.stalled[3:0]", "vector_unit.front.empty",
                  "vector_unit.front.pipe2_running", "vector_unit.front.go_elementwise",
                  "vector_unit.front.dispatch.running1", "vector_unit.front.dispatch.draining2",
                  "vector_unit.front.pipe2_free", "vector_unit.front.pipe2_released",
                  "vector_unit.front.dispatch.released2", "vector_unit.front.check_cmds.level[2:0]",
                  "vector_unit.front.speculate", "vector_unit.front.drop[2:0]"):
        assert trace in group, trace
    assert not any("held" in l for l in group)
    assert any("perf__stalled__" in l for l in lines)
    monkeypatch.setattr(waves, "fst_signals", lambda f: sigs[:1] + sigs[2:3])
    lines = waves.write_gtkw(fst, filters={}).read_text().splitlines()
    assert not any("queues and hazard stalls" in l or "stalled-on-hazard" in l for l in lines)
