"""The PTO assembler (pto): types, the three syntax forms of every instruction, the builder, placement,
binding and the errors (file:line:col with a caret)."""

import numpy as np
import pytest

from rtl.config import preset
from rtl.isa import DType, INSTRUCTIONS, Layout, OobMode, Opcode, Status
from pto import AsmError, Builder, InputError, MemRefType, TileType, memref, mnemonic, parse, signature, tile
from pto.types import ELEMENT_TYPES, parse_type

T16 = "!pto.tile<16x16xf32>"


def prog(body, args="", results="", attrs=""):
    res = f" -> ({results})" if results else ""
    return f"func.func @p({args}){res}{attrs} {{\n{body}\n}}\n"


# ---------------------------------------------------------------------------------------------- types

@pytest.mark.parametrize("spelling,dtype", list(ELEMENT_TYPES.items()))
def test_element_spellings(spelling, dtype):
    t = parse_type(f"!pto.tile<4x8x{spelling}>")
    assert (t.rows, t.cols, t.dtype, t.valid) == (4, 8, dtype, (4, 8))
    assert parse_type(str(t)) == t


def test_tile_types():
    t = parse_type("!pto.tile<16x1xf16, col_major>")
    assert t.layout == Layout.COL_MAJOR and str(t) == "!pto.tile<16x1xf16, col_major>"
    t = parse_type("!pto.tile<16x16xf32, valid=8x?>")
    assert t.valid == (8, None) and not t.static
    b = parse_type("!pto.tile_buf<vec, 1x32xbf16, valid=?x?>")
    assert b.buf and b.valid == (None, None) and b.dtype == DType.BF16
    k = parse_type("!pto.tile_buf<loc=vec, dtype=f32, rows=32, cols=32, v_row=32, v_col=16, blayout=col_major, "
                   "slayout=none_box, fractal=512, pad=0>")
    assert (k.rows, k.cols, k.valid, k.layout) == (32, 32, (32, 16), Layout.COL_MAJOR)
    assert parse_type("!pto.tile_buf<acc, 1x16xf32>").same(parse_type("!pto.tile<1x16xf32>"))


def test_memref_types():
    assert parse_type("!pto.memref<1x1x1x1024x64xf32>") == MemRefType((1024, 64), DType.FP32)
    assert parse_type("!pto.memref<16xi32>").shape == (1, 16)
    m = parse_type("!pto.memref<?x64xf8E5M2, strided<[128, 1]>>")
    assert m.shape == (None, 64) and m.row_stride == 128 and m.dtype == DType.FP8E5M2
    assert parse_type(str(m)) == m


@pytest.mark.parametrize("text,col,msg", [
    ("!pto.tile<4x4xq32>", 15, "unknown element type"),
    ("!pto.tile<4xf32>", 11, "static 2-D shape"),
    ("!pto.tile<4x4xf32, diagonal>", 20, "unknown tile parameter"),
    ("!pto.memref<2x4x4xf32>", 13, "all but the last two"),
    ("!pto.tensor<4x4xf32>", 1, "unknown type"),
])
def test_type_errors(text, col, msg):
    src = prog(f"  %b = tload %a : !pto.memref<4x4xf32> -> {text}", "%a: !pto.memref<4x4xf32>")
    with pytest.raises(AsmError) as e:
        parse(src, "t.pto")
    assert msg in e.value.message
    assert e.value.loc.line == 2
    assert e.value.loc.col == src.split("\n")[1].index("!pto", 20) + col


# ---------------------------------------------------------------------------------------------- forms

SEED_FORMS = [
    # MGATHER.txt
    ("%dst = mgather.row %table, %idx : (!pto.memref<64x16xf32>, !pto.tile<8x1xi32>) -> !pto.tile<8x16xf32>",
     Opcode.MGATHER_ROW),
    ("%dst = mgather.elem %table, %idx : (!pto.memref<64x16xf32>, !pto.tile<8x16xi32>) -> !pto.tile<8x16xf32>",
     Opcode.MGATHER_ELEM),
    # TGEMV_ACC.txt: synchronous, Level 1, Level 2
    ("%acc1 = tgemv.acc %acc0, %a, %b : (!pto.tile<1x16xf32>, !pto.tile<1x16xf16>, !pto.tile<16x16xf16>) -> "
     "!pto.tile<1x16xf32>", Opcode.TGEMV_ACC),
    ("%c_out = pto.tgemv.acc %c_in, %a, %b : (!pto.tile<1x16xf32>, !pto.tile<1x16xf16>, !pto.tile<16x16xf16>) -> "
     "!pto.tile<1x16xf32>", Opcode.TGEMV_ACC),
    ("pto.tgemv.acc ins(%c_in, %a, %b : !pto.tile_buf<acc, 1x16xf32>, !pto.tile_buf<left, 1x16xf16>, "
     "!pto.tile_buf<right, 16x16xf16>) outs(%c_out : !pto.tile_buf<acc, 1x16xf32>)", Opcode.TGEMV_ACC),
    # TROWEXPANDMUL.txt
    ("%dst = trowexpandmul %src0, %src1 : !pto.tile<16x16xf16>, !pto.tile<16x1xf16, col_major> -> "
     "!pto.tile<16x16xf16>", Opcode.TROWEXPANDMUL),
    ("%dst = pto.trowexpandmul %src0, %src1 : !pto.tile<16x16xf16>, !pto.tile<16x1xf16, col_major> -> "
     "!pto.tile<16x16xf16>", Opcode.TROWEXPANDMUL),
    ("pto.trowexpandmul ins(%src0, %src1 : !pto.tile_buf<vec, 16x16xf16>, !pto.tile_buf<vec, 16x1xf16, col_major>) "
     "outs(%dst : !pto.tile_buf<vec, 16x16xf16>)", Opcode.TROWEXPANDMUL),
    # TPARTADD.txt (the synchronous form has one type for both sources)
    ("%dst = tpartadd %src0, %src1 : !pto.tile<16x16xf32> -> !pto.tile<16x16xf32>", Opcode.TPARTADD),
    ("%dst = pto.tpartadd %src0, %src1 : (!pto.tile<16x16xf32>, !pto.tile<16x16xf32>) -> !pto.tile<16x16xf32>",
     Opcode.TPARTADD),
    ("pto.tpartadd ins(%src0, %src1 : !pto.tile_buf<vec, 16x16xf32>, !pto.tile_buf<vec, 16x16xf32>) "
     "outs(%dst : !pto.tile_buf<vec, 16x16xf32>)", Opcode.TPARTADD),
]

ARGS = {"table": "!pto.memref<64x16xf32>", "idx": None, "acc0": "!pto.tile<1x16xf32>", "c_in": "!pto.tile<1x16xf32>",
        "a": "!pto.tile<1x16xf16>", "b": "!pto.tile<16x16xf16>"}


def _args_for(line, op):
    import re
    names = re.findall(r"%(\w+)", line.split(":")[0] if "ins(" not in line else line.split("outs(")[0])
    res = re.match(r"\s*%(\w+)\s*=", line)
    names = [n for n in names if not (res and n == res.group(1))]
    sig = signature(op)
    types = re.findall(r"!pto\.\w+<(?:[^<>]|<[^<>]*>)*>", line)
    return ", ".join(f"%{n}: {t}" for n, t in zip(names, types if len(types) > 1 or len(names) == 1 else
                                                   types * len(names)))


@pytest.mark.parametrize("line,op", SEED_FORMS, ids=[f"{i}-{o.name}" for i, (_, o) in enumerate(SEED_FORMS)])
def test_seed_forms(line, op):
    p = parse(prog("  " + line, _args_for(line, op)))
    (ins,) = p.instrs
    assert ins.opcode == op
    head = line.split("=", 1)[1].split()[0] if "ins(" not in line else ""
    assert ins.form == ("dps" if "ins(" in line else "ssa" if head.startswith("pto.") else "sync")
    p.assemble("default")         # the static checks pass (every seed example is legal)
    again = parse(p.text())
    assert again.signature_key() == p.signature_key()


def _legal(op):
    """A small legal instruction of every opcode, built with the Builder."""
    b = Builder(mnemonic(op).replace(".", "_"))
    f32, i32 = "f32", "i32"
    fam = INSTRUCTIONS[op].family
    if op == Opcode.TSYNC:
        assert b.tsync() is None
        b.ret()
    elif op == Opcode.TLOAD:
        b.ret(b.tload(b.arg("m", memref(4, 8, f32)), tile(4, 8, f32)))
    elif op == Opcode.TSTORE:
        b.ret(b.tstore(b.arg("t", tile(4, 8, f32)), memref(4, 8, f32)))
    elif op == Opcode.MGATHER_ROW:
        b.ret(b.op("mgather.row", [b.arg("m", memref(32, 8, f32)), b.arg("i", tile(4, 1, i32))], tile(4, 8, f32),
                   attrs={"oob": "wrap"}))
    elif op == Opcode.MGATHER_ELEM:
        b.ret(b.mgather_elem(b.arg("m", memref(32, 8, f32)), b.arg("i", tile(4, 8, i32)), tile(4, 8, f32),
                             oob=OobMode.ZERO))
    elif op == Opcode.LOCAL_GATHER:
        b.ret(b.local_gather(b.arg("s", tile(16, 16, f32)), b.arg("i", tile(16, 1, "ui16")), tile(16, 12, f32),
                             num_elem_per_idx=4, num_valid_indices=3))
    elif fam == "elementwise" and Status.VALIDITY_PATTERN in INSTRUCTIONS[op].special:
        b.ret(b.op(mnemonic(op), [b.arg("x", tile(4, 8, f32)), b.arg("y", tile(4, 8, f32, valid=(2, 8)))],
                   tile(4, 8, f32)))
    elif fam == "elementwise":
        b.ret(b.op(mnemonic(op), [b.arg("x", tile(4, 8, f32)), b.arg("y", tile(4, 1, f32, layout="col_major"))],
                   tile(4, 8, f32)))
    else:
        c = [b.arg("c", tile(1, 8, f32))] if op == Opcode.TGEMV_ACC else []
        a, bb = b.arg("a", tile(1, 4, "f16")), b.arg("b", tile(4, 8, "f16"))
        bias = [b.arg("bias", tile(1, 8, f32))] if op == Opcode.TGEMV_BIAS else []
        b.ret(b.op(mnemonic(op), c + [a, bb] + bias, tile(1, 8, f32)))
    return b.build()


@pytest.mark.parametrize("op", list(Opcode), ids=lambda o: o.name)
def test_every_instruction_builder_equals_parser(op):
    p = _legal(op)
    text = p.text()
    q = parse(text)
    assert q.signature_key() == p.signature_key()
    assert q.assemble().static[0][0] == Status.OK
    # the DPS form of the same instruction parses to the same instruction
    ins = p.instrs[0]
    sig = signature(op)
    ops = [ins.operands[s] for s, _, _ in sig.inputs]
    dps = text.replace(text.split("\n")[1], f"  %{ins.out.name} = pto.alloc_tile : {ins.out.type}\n  pto.{mnemonic(op)} "
                       f"{_attr_text(text)}ins({', '.join('%' + v.name for v in ops)} : "
                       f"{', '.join(str(v.type) for v in ops)}) outs(%{ins.out.name} : {ins.out.type})") \
        if ins.out is not None and ins.out.type.kind == "tile" else None
    if dps:
        d = parse(dps).instrs[0]
        assert (d.opcode, d.attrs, [v.name for v in d.operands.values()]) == \
               (ins.opcode, ins.attrs, [v.name for v in ins.operands.values()])


_EVENT = "[#pto.pipe_event_type<TLOAD>, #pto.pipe_event_type<TVEC>, #pto.event<EVENT_ID3>]"


def test_sync_forms():
    """The barrier (``tsync``, ``pto.tsync``, PTO's one-op ``tsync.op #pto.op<...>``: all one TSYNC, which
    waits for everything) and PTOAS's events (checked, then dropped: no instruction)."""
    body = "\n".join(["  %b = tpartadd %a, %a : !pto.tile<4x8xf32> -> !pto.tile<4x8xf32>",
                      f"  pto.record_event {_EVENT}", f"  pto.wait_event {_EVENT}",
                      "  tsync", "  pto.tsync", "  tsync.op #pto.op<TADD>", "  pto.tsync {expect = #pto.status<ok>}",
                      "  pto.tsync", "  %c = tpartadd %b, %b : !pto.tile<4x8xf32> -> !pto.tile<4x8xf32>",
                      "  return %b : !pto.tile<4x8xf32>"])
    p = parse(prog(body, "%a: !pto.tile<4x8xf32>", "!pto.tile<4x8xf32>"))
    assert [i.opcode for i in p.instrs] == [Opcode.TPARTADD] + [Opcode.TSYNC] * 5 + [Opcode.TPARTADD]
    assert [i.form for i in p.instrs[1:6]] == ["sync", "ssa", "ssa", "ssa", "ssa"]
    assert parse(p.text()).signature_key() == p.signature_key()
    a = p.assemble()
    assert [s for s, _ in a.static] == [Status.OK] * 7
    cmds = a.bind({"a": np.ones((4, 8), np.float32)}).commands
    assert cmds[1:6] == [{"opcode": Opcode.TSYNC}] * 5


@pytest.mark.parametrize("line,col_of,msg", [
    ("  tsync %a : !pto.tile<4x8xf32>", "%a", "takes no operands here"),
    ("  %x = pto.tsync", "%x", "has no result"),
    ("  tsync {oob = 1}", "1}", "has no attribute 'oob'"),
    ("  tsync.op 3", "3", "expected the op of the barrier"),
    ("  pto.record_event [#pto.pipe_event_type<TLOAD>, #pto.pipe_event_type<PIPE_X>, #pto.event<EVENT_ID0>]",
     "pto.record", "destination pipe 'PIPE_X' is not a pipe event type"),
    ("  pto.wait_event [#pto.pipe_event_type<TLOAD>, #pto.pipe_event_type<TVEC>, #pto.event<EVENT_ID8>]",
     "pto.wait", "EVENT_ID8"),
    ("  pto.wait_event [#pto.pipe_event_type<TLOAD>, #pto.event<EVENT_ID0>]", "#pto.event", "expected #pto.pipe_event_type"),
    ("  pto.record_event #pto.event<EVENT_ID0>", "#pto", "expected '['"),
])
def test_sync_errors(line, col_of, msg):
    src = prog(line, "%a: !pto.tile<4x8xf32>")
    e = _err(src)
    assert msg in e.message, e
    assert e.loc.line == 2 and e.loc.col == src.split("\n")[1].index(col_of) + 1, str(e)


def test_builder_sync():
    b = Builder("s")
    b.sync_event("record", "TMATMUL", "TSTORE_ACC", "EVENT_ID7")
    with pytest.raises(AsmError, match="no operands"):
        b.tsync(b.arg("x", tile(4, 8, "f32")))
    with pytest.raises(AsmError, match="source pipe"):
        b.sync_event("wait", "MTE2", "TVEC", "EVENT_ID0")


def _attr_text(text):
    line = text.split("\n")[1]
    return line[line.index("{"):line.index("}") + 1] + " " if "{" in line else ""


def test_attributes():
    p = parse(prog("  %o = local_gather %s, %i {num_elem_per_idx = 4, num_valid_indices = 64} : "
                   "(!pto.tile<16x64xf32>, !pto.tile<16x4xui16>) -> !pto.tile<16x256xf32>",
                   "%s: !pto.tile<16x64xf32>, %i: !pto.tile<16x4xui16>"))
    assert p.instrs[0].attrs == {"nepi_log2": 2, "num_valid": 64}
    p = parse(prog('  %d = mgather.row %t, %i {oob = "clamp"} : (!pto.memref<8x4xf32>, !pto.tile<2x1xi32>) -> '
                   '!pto.tile<2x4xf32>', "%t: !pto.memref<8x4xf32>, %i: !pto.tile<2x1xi32>"))
    assert p.instrs[0].attrs == {"oob": OobMode.CLAMP}


def test_tstore_forms():
    args = "%t: !pto.tile<4x8xf32>, %m: !pto.memref<4x8xf32>"
    forms = ["  tstore %t, %m : !pto.tile<4x8xf32>, !pto.memref<4x8xf32>",
             "  %m2 = pto.tstore %t, %m : (!pto.tile<4x8xf32>, !pto.memref<4x8xf32>) -> !pto.memref<4x8xf32>",
             "  pto.tstore ins(%t : !pto.tile<4x8xf32>) outs(%m : !pto.memref<4x8xf32>)"]
    for f in forms:
        p = parse(prog(f, args))
        ins = p.instrs[0]
        assert ins.inplace and ins.out.buffer is p.args[1].buffer
        assert parse(p.text()).signature_key() == p.signature_key()
    p = parse(prog("  %n = tstore %t : !pto.tile<4x8xf32> -> !pto.memref<4x8xf32>\n  return %n : !pto.memref<4x8xf32>",
                   args, "!pto.memref<4x8xf32>"))
    assert not p.instrs[0].inplace and p.outputs[0].buffer.space == "gm"


# ---------------------------------------------------------------------------------------------- placement

def test_explicit_and_automatic_placement():
    b = Builder("place")
    x = b.arg("x", tile(4, 8, "f32"))            # 128 bytes
    y = b.arg("y", tile(3, 3, "f16"))            # 18 bytes -> the next tile 32-aligned
    z = b.arg("z", tile(4, 1, "f32", layout="col_major"))
    b.tassign(x, 0x800)
    t1 = b.trowexpandadd(x, z, tile(4, 8, "f32"), name="t1")
    t2 = b.tpartmul(t1, t1, tile(4, 8, "f32"), name="t2")
    t3 = b.tpartmax(t2, t2, tile(4, 8, "f32"), name="t3")
    b.ret(t3, y)
    a = b.build().assemble("small")
    ub = {buf.name: a.ub[buf.id] for buf in a.program.buffers}
    assert ub["x"] == 0x800
    assert all(v % 32 == 0 for v in ub.values())
    sizes = {buf.name: buf.type.nbytes for buf in a.program.buffers}
    # y (an output) and z, t1 (live together) do not overlap one another nor x
    for p_, q_ in [("y", "z"), ("y", "t1"), ("z", "t1"), ("t1", "t2"), ("t2", "t3"), ("y", "t3")]:
        assert ub[p_] + sizes[p_] <= ub[q_] or ub[q_] + sizes[q_] <= ub[p_], (p_, q_, ub)
    # z and t1 are dead after t2: t3 reuses their space
    assert ub["t3"] < ub["t1"] + sizes["t1"] and ub["t3"] == ub["z"]


def test_concurrent_placement_keeps_freed_space_unused():
    """On a unit whose pipes run at once a tile's space is not reused by the next instructions (they would
    wait on its last user): double_buffer's third load gets space of its own there, and the first load's on
    the serial unit; a program that only fits the tight way still assembles."""
    from pathlib import Path
    from rtl.config import preset
    p = parse((Path(__file__).parent.parent / "examples" / "double_buffer.pto").read_text(), "double_buffer.pto")
    def placed(config):
        a = p.assemble(config)
        return {buf.name: a.ub[buf.id] for buf in p.buffers if buf.id in a.ub}
    serial, conc = placed("small"), placed("small_concurrent")
    assert serial["t2"] == serial["t0"] and conc["t2"] != conc["t0"]
    # in the concurrent placement no space is taken again within pipe_entries instructions of its last use where
    # the 4 KiB UB allows: t0..t3 and s0..s2 are all apart
    names = ["t0", "t1", "s0", "t2", "s1", "t3", "s2"]
    assert len({conc[n] for n in names}) == len(names)
    assert preset("small_concurrent").pipe_entries >= 4
    # a chain of five 1 KiB tiles in the 4 KiB UB: with a gap of 8 it would need 5 KiB; it takes the largest
    # gap that fits (2 here: %e takes %a's space three instructions after %a's last use, not at once)
    src = prog("  %b = tpartadd %a, %a : !pto.tile<16x16xf32> -> !pto.tile<16x16xf32>\n"
               "  %c = tpartadd %b, %b : !pto.tile<16x16xf32> -> !pto.tile<16x16xf32>\n"
               "  %d = tpartadd %c, %c : !pto.tile<16x16xf32> -> !pto.tile<16x16xf32>\n"
               "  %e = tpartadd %d, %d : !pto.tile<16x16xf32> -> !pto.tile<16x16xf32>\n"
               "  return %e : " + T16, f"%a: {T16}", T16)
    tight, gapped = parse(src).assemble("small").ub, parse(src).assemble("small_concurrent").ub
    assert list(tight.values()) == [0, 1024, 0, 1024, 0] and list(gapped.values()) == [0, 1024, 2048, 3072, 0]


def test_ub_overflow():
    src = prog("  %b = tpartadd %a, %a : !pto.tile<16x16xf32> -> !pto.tile<16x16xf32>\n"
               "  %c = tpartadd %a, %b : !pto.tile<16x16xf32> -> !pto.tile<16x16xf32>\n"
               "  %d = tpartadd %a, %c : !pto.tile<16x16xf32> -> !pto.tile<16x16xf32>\n"
               "  %e = tpartadd %b, %d : !pto.tile<16x16xf32> -> !pto.tile<16x16xf32>\n"
               "  %f = tpartadd %c, %e : !pto.tile<16x16xf32> -> !pto.tile<16x16xf32>\n"
               "  return %a, %b, %c, %d, %e, %f : " + ", ".join([T16] * 6), f"%a: {T16}", ", ".join([T16] * 6))
    parse(src).assemble("default")
    with pytest.raises(AsmError) as e:
        parse(src, "ovf.pto").assemble("small")          # 6 KiB live in a 4 KiB UB
    assert "UB overflow: %e" in e.value.message and e.value.loc.line == 5
    with pytest.raises(AsmError, match="UB overflow: input %a"):
        parse(prog(f"  pto.tassign %a, @tile(0xf80)\n  return %a : {T16}", f"%a: {T16}", T16)).assemble("small")


# ---------------------------------------------------------------------------------------------- errors

def _err(src, config="small"):
    with pytest.raises(AsmError) as e:
        parse(src, "e.pto").assemble(config)
    return e.value


def test_error_format():
    e = _err("func.func @p(%a: !pto.tile<4x4xf32>) {\n  %b = tpartadd %a, %a %a : !pto.tile<4x4xf32>\n}\n")
    s = str(e).split("\n")
    assert s[0].startswith("e.pto:2:")
    assert s[1] == "    %b = tpartadd %a, %a %a : !pto.tile<4x4xf32>"
    assert s[2].index("^") == s[1].index("%a %a") + 3


@pytest.mark.parametrize("body,line,col_of,msg", [
    ("  %b = tfoo %a, %a : !pto.tile<4x8xf32> -> !pto.tile<4x8xf32>", 2, "tfoo", "unknown op 'tfoo'"),
    ("  %b = tpartadd %a : !pto.tile<4x8xf32> -> !pto.tile<4x8xf32>", 2, "tpartadd", "takes 2 operands (src0, src1)"),
    ("  %b = tgemv.acc %a, %a : !pto.tile<4x8xf32> -> !pto.tile<4x8xf32>", 2, "tgemv", "takes 3 operands (C_in, A, B)"),
    ("  %b = tpartadd %a, %a : !pto.tile<4x8xf16> -> !pto.tile<4x8xf32>", 2, "!pto", "type mismatch"),
    ("  %b = tpartadd %a, %q : !pto.tile<4x8xf32> -> !pto.tile<4x8xf32>", 2, "%q", "undefined value %q"),
    ("  %b = tload %a : !pto.tile<4x8xf32> -> !pto.tile<4x8xf32>", 2, "%a :", "must be a !pto.memref"),
    ("  %b = tpartadd %a, %a {oob = #pto.oob<clamp>} : !pto.tile<4x8xf32> -> !pto.tile<4x8xf32>", 2, "#pto",
     "has no attribute 'oob'"),
    ("  %b = tpartadd %a, %a : !pto.tile<4x8xf32> -> !pto.tile<4x8xf32>\n  %b = tpartadd %a, %a : "
     "!pto.tile<4x8xf32> -> !pto.tile<4x8xf32>", 3, "%b", "redefinition of %b"),
    ("  %b = tpartadd %a, %a : !pto.tile<4x8xf32> -> !pto.tile<4x8xi32>", 2, "tpartadd", "DTYPE_MISMATCH"),
    ("  %b = tpartadd %a, %a : !pto.tile<4x8xf32> -> !pto.tile<4x8xf32, valid=2x2>", 2, "tpartadd",
     "VALIDITY_PATTERN"),
    ("  %b = trowexpandmul %a, %a : !pto.tile<4x8xf32> -> !pto.tile<4x8xf32, valid=4x4>", 2, "trowexpandmul",
     "SHAPE_MISMATCH"),
    ("  pto.tassign %a, @gm(0x100)", 2, "0x100", "place it with @tile"),
    ("  %b = tpartadd %a, %a : !pto.tile<4x8xf32> -> !pto.tile<4x8xf32>\n  return %b : !pto.tile<4x4xf32>", 3,
     "!pto", "type mismatch"),
    ("  %b = tpartadd %a, %a : !pto.tile<4x8xf32> -> !pto.tile<4x8xf32>\n  %c = ", 4, None, "expected an op name"),
])
def test_errors(body, line, col_of, msg):
    src = prog(body, "%a: !pto.tile<4x8xf32>")
    e = _err(src)
    assert msg in e.message, e
    assert e.loc.line == line
    if col_of:
        text = src.split("\n")[line - 1]
        assert e.loc.col == text.index(col_of) + 1, str(e)


def test_check_status_is_reported():
    e = _err(prog("  %b = tpartadd %a, %a : !pto.tile<4x8xf32> -> !pto.tile<4x8xi32>", "%a: !pto.tile<4x8xf32>"))
    assert e.status == Status.DTYPE_MISMATCH


def test_expect_attribute():
    body = "  %b = tpartadd %a, %a {expect = #pto.status<validity_pattern>} : !pto.tile<4x8xf32> -> " \
           "!pto.tile<4x8xf32, valid=2x2>"
    a = parse(prog(body, "%a: !pto.tile<4x8xf32>")).assemble()
    assert a.static[0][0] == Status.VALIDITY_PATTERN
    e = _err(prog(body.replace("validity_pattern", "shape_mismatch"), "%a: !pto.tile<4x8xf32>"))
    assert "expected SHAPE_MISMATCH" in e.message


def test_mgather_a2a3_profile_is_an_error():
    src = prog("  %d = mgather.row %t, %i : (!pto.memref<8x4xf32>, !pto.tile<2x1xi32>) -> !pto.tile<2x4xf32>",
               "%t: !pto.memref<8x4xf32>, %i: !pto.tile<2x1xi32>")
    assert _err(src, "a2a3").status == Status.DTYPE_UNSUPPORTED


# ---------------------------------------------------------------------------------------------- binding

def _tpart_dynamic():
    return parse(prog("  %d = pto.tpartadd %x, %y : (!pto.tile<16x16xf32>, !pto.tile<16x16xf32, valid=?x?>) -> "
                      "!pto.tile<16x16xf32, valid=?x?>\n  return %d : !pto.tile<16x16xf32, valid=?x?>",
                      "%x: !pto.tile<16x16xf32>, %y: !pto.tile<16x16xf32, valid=?x?>",
                      "!pto.tile<16x16xf32, valid=?x?>")).assemble()


def test_dynamic_valid_shape_binding():
    a = _tpart_dynamic()
    assert a.static == [None]                           # checked at run time
    x = np.ones((16, 16), np.float32)
    img = a.bind({"x": x, "y": np.ones((8, 4), np.float32)})
    cmd = img.commands[0]
    assert (cmd["src1"]["valid_rows"], cmd["src1"]["valid_cols"]) == (8, 4)
    assert (cmd["dst"]["valid_rows"], cmd["dst"]["valid_cols"]) == (16, 16)   # inferred: the larger source


@pytest.mark.parametrize("inputs,msg", [
    ({"x": np.ones((16, 16), np.float32)}, "missing input 'y'"),
    ({"x": np.ones((16, 8), np.float32), "y": np.ones((2, 2), np.float32)}, "input 'x' has shape (16, 8)"),
    ({"x": np.ones((16, 16), np.float32), "y": np.ones((17, 2), np.float32)}, "input 'y' has shape (17, 2)"),
    ({"x": np.ones((16, 16), np.float64), "y": np.ones((2, 2), np.float32)}, "input 'x' has dtype float64"),
    ({"x": np.ones((16, 16), np.float32), "y": np.ones((2, 2), np.float32), "z": np.ones(1)}, "unknown input 'z'"),
])
def test_input_errors(inputs, msg):
    with pytest.raises(InputError) as e:
        _tpart_dynamic().bind(inputs)
    assert msg in str(e.value)
