"""``python -m sim asm PROGRAM.pto [--config NAME] [--data inputs.npz] [--canonical]``: assemble and print
the placement and, per instruction, the static check result (or, with ``--data``, the bound commands)."""

import argparse

from sim.programs.cli import readable_file, user_errors
from pto.parser import parse_file
from pto.program import config_from_spec, mnemonic


@user_errors
def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m sim asm")
    p.add_argument("program")
    p.add_argument("--config")
    p.add_argument("--data")
    p.add_argument("--canonical", action="store_true", help="print the program in canonical form")
    a = p.parse_args(argv)
    if a.config:
        config_from_spec(a.config, source=f"--config {a.config!r}")
    prog = parse_file(readable_file(a.program, "program"))
    asm = prog.assemble(a.config)
    if a.canonical:
        print(prog.text(), end="")
        return 0
    for b in prog.buffers:
        where = f"UB {asm.ub[b.id]:#07x}" if b.space == "ub" else ("GM " + (f"{b.addr:#x}" if b.addr is not None
                                                                             else "auto"))
        print(f"%{b.name:<12} {where:<12} {b.type}")
    print()
    if a.data:
        from sim.programs.run import load_inputs
        image = asm.bind(load_inputs(a.data))
        for info, cmd in zip(image.info, image.commands):
            print(f"line {info['line']}: {info['op']}: {cmd}")
    else:
        for ins, st in zip(prog.instrs, asm.static):
            what = "shapes bound at run time" if st is None else st[0].name
            print(f"line {ins.line}: {mnemonic(ins.opcode)}: {what}")
    return 0
