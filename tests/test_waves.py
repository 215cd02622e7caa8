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
