"""Issue #34: every user mistake gets a clear answer. For each: the message (naming the file, with
``file:line:col``, the line and a caret for an error in a program), the exit code (2 for an error in what the
user gave; 1 for a status the program answers at run time, docs/pto-as.md "Runner"), and no Python traceback.
Golden-only runs (``--sim none``): a second or two each."""

import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from pto import AsmError, Builder, memref, parse, parse_file, tile

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

TPARTADD = """func.func @vp(%a: !pto.tile<4x8xf32>, %b: !pto.tile<4x8xf32, valid=?x?>) -> (!pto.tile<4x8xf32, valid=2x8>) {
  %c = tpartadd %a, %b : (!pto.tile<4x8xf32>, !pto.tile<4x8xf32, valid=?x?>) -> !pto.tile<4x8xf32, valid=2x8>
  return %c : !pto.tile<4x8xf32, valid=2x8>
}
"""


def cli(*args, module="sim"):
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def user_error(r, *messages):
    """Exit code 2, no traceback, each message in stderr."""
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, r.stderr
    for m in messages:
        assert m in r.stderr, (m, r.stderr)


@pytest.fixture
def vp(tmp_path):
    """A TPARTADD whose ``?x?`` source is bound at run time to an illegal validity pattern, and its inputs."""
    p = tmp_path / "vp.pto"
    p.write_text(TPARTADD)
    np.savez(tmp_path / "in.npz", a=np.ones((4, 8), np.float32), b=np.ones((3, 8), np.float32))
    return p, tmp_path / "in.npz"


# ------------------------------------------------------------------------------------- 1: no tracebacks

def test_npy_as_data(vp, tmp_path):
    p, _ = vp
    np.save(tmp_path / "x.npy", np.ones(3))
    r = cli("run", p, "--data", tmp_path / "x.npy", "--sim", "none")
    user_error(r, f"error: --data {tmp_path / 'x.npy'}: a .npy file (a single array); give an .npz")


def test_text_named_npz(vp, tmp_path):
    p, _ = vp
    (tmp_path / "t.npz").write_text("a = 1\n")
    r = cli("run", p, "--data", tmp_path / "t.npz", "--sim", "none")
    user_error(r, f"error: --data {tmp_path / 't.npz'}: not an .npz file (text)")


def test_folder_as_program(vp, tmp_path):
    _, data = vp
    r = cli("run", tmp_path, "--data", data, "--sim", "none")
    user_error(r, f"error: program {tmp_path}: is a folder, not a file")


@pytest.mark.parametrize("command", ["run", "asm"])
def test_missing_program(tmp_path, command):
    r = cli(command, tmp_path / "nope.pto")
    user_error(r, f"error: program {tmp_path / 'nope.pto'}: no such file")


def test_out_checked_before_the_run(vp, tmp_path):
    p, data = vp
    r = cli("run", p, "--data", data, "--sim", "none", "--out", tmp_path / "missing" / "out.npz")
    user_error(r, f"error: --out {tmp_path / 'missing' / 'out.npz'}: folder {tmp_path / 'missing'} does not exist")
    assert r.stdout == ""                   # nothing ran: no table


@pytest.mark.parametrize("command", ["run", "asm"])
def test_non_utf8_program(tmp_path, command):
    p = tmp_path / "latin1.pto"
    p.write_bytes("func.func @p() {\n  // caf\u00e9\n}\n".encode("latin-1"))
    r = cli(command, p, "--sim", "none") if command == "run" else cli(command, p)
    user_error(r, f"{p}:2:9: error: not UTF-8 text: byte 0xe9", "  // caf")
    assert r.stderr.rstrip().endswith("^")


def test_read_npz_api(tmp_path):
    from pto import InputError
    from sim.programs.run import load_inputs
    np.savez(tmp_path / "o.npz", a=np.array([{}], dtype=object))
    with pytest.raises(InputError, match="array 'a' cannot be loaded without pickle"):
        load_inputs(tmp_path / "o.npz")
    (tmp_path / "z.npz").write_bytes(b"PK\x03\x04 broken")
    with pytest.raises(InputError, match="not a readable .npz file"):
        load_inputs(tmp_path / "z.npz")


def test_gm_input_outside_the_address_space(tmp_path):
    p = tmp_path / "g.pto"
    p.write_text("func.func @g(%m: !pto.memref<?x8xf32>) -> (!pto.tile<4x8xf32, valid=?x?>) {\n"
                 "  pto.tassign %m, @gm(0x100000000)\n"
                 "  %t = tload %m : (!pto.memref<?x8xf32>) -> !pto.tile<4x8xf32, valid=?x?>\n"
                 "  return %t : !pto.tile<4x8xf32, valid=?x?>\n}\n")
    np.savez(tmp_path / "m.npz", m=np.ones((4, 8), np.float32))
    r = cli("run", p, "--data", tmp_path / "m.npz", "--sim", "none")
    user_error(r, f"{p}:2:23: error: GM overflow: input %m at 0x100000000 + 128 bytes")


# ------------------------------------------------------------------------------------- 2: run-time statuses

def test_runtime_status_at_its_line(vp, tmp_path):
    p, data = vp
    out = tmp_path / "out.npz"
    r = cli("run", p, "--data", data, "--sim", "none", "--out", out)
    assert r.returncode == 1 and "Traceback" not in r.stderr        # a status, not a user error (docs: exit 1)
    lines = r.stderr.splitlines()
    assert lines[0] == (f"{p}:2:8: error: tpartadd: VALIDITY_PATTERN: TPARTADD: validity pattern src0 (4, 8), "
                        f"src1 (3, 8), dst (2, 8): one source must equal dst's valid shape and the other must not "
                        f"exceed it (shapes bound at run time: %b valid 3x8)")
    assert lines[1] == "  " + TPARTADD.splitlines()[1] and lines[2] == "  " + " " * 7 + "^"
    # the result never computed is not written as zeros
    assert "not computed: c (line 2: tpartadd answered VALIDITY_PATTERN): left out of" in r.stdout
    assert "c" not in np.load(out).files


def test_uncomputed_follows_the_values(tmp_path):
    """A result computed from a failed instruction's result is not computed either; a later successful write
    of the same value computes it again."""
    from sim.programs.run import run_program
    text = TPARTADD.replace("-> (!pto.tile<4x8xf32, valid=2x8>)",
                            "-> (!pto.tile<4x8xf32, valid=2x8>, !pto.tile<4x8xf32>, !pto.tile<4x8xf32>)")
    text = text.replace("  return %c : !pto.tile<4x8xf32, valid=2x8>\n",
                        "  %d = tpartadd %a, %c : (!pto.tile<4x8xf32>, !pto.tile<4x8xf32, valid=2x8>) -> !pto.tile<4x8xf32>\n"
                        "  %e = tpartadd %a, %a : (!pto.tile<4x8xf32>, !pto.tile<4x8xf32>) -> !pto.tile<4x8xf32>\n"
                        "  return %c, %d, %e : !pto.tile<4x8xf32, valid=2x8>, !pto.tile<4x8xf32>, !pto.tile<4x8xf32>\n")
    rep = run_program(parse(text, "chain.pto"), {"a": np.ones((4, 8), np.float32), "b": np.ones((3, 8), np.float32)})
    assert rep.missing == {"c": "line 2: tpartadd answered VALIDITY_PATTERN", "d": "line 2: tpartadd answered VALIDITY_PATTERN"}
    assert set(rep.outputs) == {"e"}
    assert [e.loc.line for e in rep.errors] == [2]


# ------------------------------------------------------------------------------------- 3: blame on the right line

def test_misaligned_tassign_is_named(tmp_path):
    p = tmp_path / "mis.pto"
    p.write_text("func.func @mis(%a: !pto.tile<4x8xf32>, %b: !pto.tile<4x8xf32>) -> (!pto.tile<4x8xf32>) {\n"
                 "  %c = tpartadd %a, %b : (!pto.tile<4x8xf32>, !pto.tile<4x8xf32>) -> !pto.tile<4x8xf32>\n"
                 "  pto.tassign %c, @tile(0x103)\n"
                 "  return %c : !pto.tile<4x8xf32>\n}\n")
    r = cli("asm", p)
    user_error(r, f"{p}:2:8: error: tpartadd: UB_MISALIGNED: dst: base 0x103 is not a multiple of 32",
               f"{p}:3:25: note: %c is placed at 0x103 here, not a multiple of 32\n    pto.tassign %c, @tile(0x103)\n"
               f"  {' ' * 24}^")


def test_misaligned_tassign_at_run_time(vp, tmp_path):
    """The same when the instruction is checked at run time (a ``?`` shape)."""
    p, data = vp
    p.write_text(TPARTADD.replace("  return", "  pto.tassign %c, @tile(0x110)\n  return"))
    np.savez(data, a=np.ones((4, 8), np.float32), b=np.ones((2, 8), np.float32))
    r = cli("run", p, "--data", data, "--sim", "none")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"{p}:2:8: error: tpartadd: UB_MISALIGNED: dst: base 0x110 is not a multiple of 32" in r.stderr
    assert f"{p}:3:25: note: %c is placed at 0x110 here, not a multiple of 32" in r.stderr


def test_shape_error_before_the_type_mismatch_it_causes(tmp_path):
    """Line 2's result has the wrong shape; line 3 uses it with the shape the writer meant: the error is line 2's."""
    p = tmp_path / "casc.pto"
    p.write_text("func.func @casc(%a: !pto.tile<4x8xf32>, %b: !pto.tile<4x8xf32>, %w: !pto.tile<4x1xf32, col_major>)"
                 " -> (!pto.tile<4x8xf32>) {\n"
                 "  %c = tpartadd %a, %b : (!pto.tile<4x8xf32>, !pto.tile<4x8xf32>) -> !pto.tile<4x4xf32>\n"
                 "  %d = trowexpandmul %c, %w : (!pto.tile<4x8xf32>, !pto.tile<4x1xf32, col_major>) -> !pto.tile<4x8xf32>\n"
                 "  return %d : !pto.tile<4x8xf32>\n}\n")
    r = cli("asm", p)
    user_error(r, f"{p}:2:8: error: tpartadd: VALIDITY_PATTERN: TPARTADD: validity pattern src0 (4, 8), src1 (4, 8), "
                  f"dst (4, 4)")
    assert "type mismatch" not in r.stderr


# ------------------------------------------------------------------------------------- 4: the Builder

def test_builder_unknown_op_lists_the_ops():
    b = Builder("p")
    with pytest.raises(AttributeError) as e:
        b.tpartadds
    msg = str(e.value)
    assert "Builder has no op 'tpartadds'; did you mean b.tpartadd?" in msg
    assert "tload, tstore, mgather_row, mgather_elem, local_gather, trowexpandmul, tpartadd" in msg


def test_builder_checks_at_the_call():
    """A shape error is reported at the call, at the caller's file, line and column (not at ``<program>`` by
    ``assemble``)."""
    b = Builder("p")
    x, y = b.arg("x", tile(4, 8, "f32")), b.arg("y", tile(4, 8, "f32"))
    line = sys._getframe().f_lineno + 2
    with pytest.raises(AsmError) as e:
        b.tpartadd(x, y, tile(4, 4, "f32"))
    err = e.value
    assert err.loc.file.endswith("test_user_errors.py") and err.loc.line == line and err.loc.col == 9
    assert "b.tpartadd(x, y, tile(4, 4, \"f32\"))" in err.loc.text
    assert err.message.startswith("tpartadd: VALIDITY_PATTERN: TPARTADD: validity pattern")
    assert str(err).startswith(f"{err.loc.file}:{line}:9: error: tpartadd: VALIDITY_PATTERN")


def test_builder_errors_from_a_script_name_its_line(tmp_path):
    script = tmp_path / "build_it.py"
    script.write_text("from pto import Builder, tile\n"
                      "b = Builder('p')\n"
                      "x = b.arg('x', tile(4, 8, 'f32'))\n"
                      "b.ret(b.tpartadd(x, x, tile(4, 4, 'f32')))\n")
    r = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 1
    assert f"{script}:4:7: error: tpartadd: VALIDITY_PATTERN" in r.stderr, r.stderr


def test_built_program_equals_the_parsed_one():
    """docs/pto-as.md, "Builder": ``program = b.build()  # == parse_file(examples/gather_scale.pto)``."""
    b = Builder("gather_scale")
    table = b.arg("table", memref(256, 32, "f16"))
    idx = b.arg("idx", tile(16, 1, "i32"))
    w = b.arg("weight", tile(16, 1, "f16", layout="col_major"))
    rows = b.mgather_row(table, idx, tile(16, 32, "f16"), name="rows", oob="clamp")
    scaled = b.trowexpandmul(rows, w, tile(16, 32, "f16"), name="scaled")
    out = b.tstore(scaled, memref(16, 32, "f16"), name="out")
    b.ret(scaled, out)
    program = b.build()
    parsed = parse_file(EXAMPLES / "gather_scale.pto")
    assert program == parsed and not program != parsed
    b.tassign(idx, 0x200)
    assert b.build() != parsed                           # a placement is part of the program


def test_docs_list_every_builder_method():
    from rtl.isa import Opcode
    from pto.builder import method_name
    doc = (ROOT / "docs" / "pto-as.md").read_text()
    for op in Opcode:
        assert f"`b.{method_name(op)}(" in doc, op


# ------------------------------------------------------------------------------------- 5: configurations

def test_config_message_names_what_was_written(vp):
    p, data = vp
    r = cli("run", p, "--data", data, "--sim", "none", "--config", "small,ub_bytez=8192")
    user_error(r, "error: --config 'small,ub_bytez=8192': unknown field 'ub_bytez' (did you mean ub_bytes?)")
    assert "--set" not in r.stderr


def test_config_attribute_message_at_the_attribute(tmp_path):
    p = tmp_path / "a.pto"
    p.write_text('func.func @p(%a: !pto.tile<4x8xf32>) -> (!pto.tile<4x8xf32>) attributes {config = "smal"} {\n'
                 "  return %a : !pto.tile<4x8xf32>\n}\n")
    r = cli("asm", p)
    user_error(r, f"{p}:1:83: error: config = 'smal': unknown configuration 'smal' (did you mean small?)")


def test_ub_overflow_suggests_a_configuration(tmp_path):
    p = tmp_path / "big.pto"
    p.write_text("func.func @big(%a: !pto.tile<32x32xf32>, %b: !pto.tile<32x32xf32>) -> (!pto.tile<32x32xf32>) {\n"
                 "  %c = tpartadd %a, %b : (!pto.tile<32x32xf32>, !pto.tile<32x32xf32>) -> !pto.tile<32x32xf32>\n"
                 "  return %c : !pto.tile<32x32xf32>\n}\n")
    r = cli("asm", p)
    user_error(r, f"{p}:1:42: error: UB overflow: %b", "does not fit in the 4096-byte UB",
               "the program needs 12288 bytes of UB: it fits with --config default (a 65536-byte UB), or "
               "--config small,ub_bytes=16384 with --sim none")
    assert parse_file(p).assemble("small,ub_bytes=16384").ub         # the suggestion fits


def test_export_set_message():
    r = cli("--config", "small", "--set", "ub_bytez=1", module="flow.export")
    user_error(r, "--set 'ub_bytez=1': unknown field 'ub_bytez' (did you mean ub_bytes?)")


# ------------------------------------------------------------------------------------- 6: the export header

def test_export_header_rebuilds_the_file(tmp_path, monkeypatch):
    """The header names the preset, the overridden fields (spelled as --set takes them) and the command line
    that writes the file again: run that command elsewhere and get the same bytes. (``ub_read_ports=1``: a
    quick export.)"""
    from flow.export import main
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    monkeypatch.chdir(first)
    assert main(["--config", "small", "--set", "ub_bytes=8192", "--set", "ub_read_ports=1", "--set", "profile=A2A3",
                 "--set", "gm_addr_bits=32", "-o", "unit.v"]) is None
    text = (first / "unit.v").read_text()
    head = text.split("\nmodule ", 1)[0]
    assert ("// configuration: preset small, overridden: ub_bytes=8192 (preset: 4096), ub_read_ports=1 (preset: 2), "
            "profile=a2a3 (preset: a5)\n") in head
    assert "//   profile = a2a3\n" in head and "//   ub_bytes = 8192\n" in head and "Profile." not in head
    assert "//   gm_addr_bits = 32\n" in head                     # the preset's value: not an override
    (rebuild,) = re.findall(r"^// rebuild: (.*)$", head, re.M)
    import shlex
    args = shlex.split(rebuild)
    assert args[:5] == ["python", "-m", "flow.export", "--config", "small"]
    monkeypatch.chdir(second)
    main(args[3:])
    assert (second / "unit.v").read_text() == text
