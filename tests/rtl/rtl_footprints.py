"""Legal commands for the footprint and scoreboard tests: the instructions of dense random programs
(sim.programs.fuzz: every opcode, results and GM regions placed over earlier ones), each also with a tile
turned column-major and with an empty valid region where the checks still pass it."""

import copy
import random

from golden.access import access, tile_span
from golden.check import check, tile_view
from rtl.config import preset
from rtl.frontend.footprint import ub_units
from rtl.isa import INSTRUCTIONS, Layout, Opcode, Status, TILE_SLOTS
from sim.programs.fuzz import random_program

__all__ = ["legal_commands", "set_footprint"]


def _variants(rng, cmd):
    """``cmd`` and legal variants of it: tiles column-major, an empty valid region."""
    out = [cmd]
    ins = INSTRUCTIONS[cmd["opcode"]]
    for slot in (s.name for s in ins.slots):
        v = copy.deepcopy(cmd)
        v[slot]["layout"] = Layout.COL_MAJOR
        out.append(v)
        v = copy.deepcopy(cmd)
        v[slot][rng.choice(["valid_rows", "valid_cols"])] = 0
        out.append(v)
    return out


def legal_commands(config_name, programs, seed=0, variants=True):
    """Commands the checks pass, in program order, from ``programs`` dense random programs (and, with
    ``variants``, each command's variants after it)."""
    cfg = preset(config_name)
    rng = random.Random(seed)
    cmds = []
    for s in range(seed, seed + programs):
        p, inputs = random_program(s, config_name, n_instrs=8, dense=True)
        for cmd in p.assemble(cfg).bind(inputs).commands:
            if cmd["opcode"] == Opcode.TSYNC:
                continue
            cmds += [c for c in (_variants(rng, cmd) if variants else [cmd]) if check(c, cfg) == Status.OK]
    return cmds


def set_footprint(ctx, fp, cmd):
    """Drive a FootprintLayout view with golden.access's ranges of ``cmd``, slot by slot (UB ranges in the
    footprint's units, ``rtl.frontend.footprint.ub_units``)."""
    ins = INSTRUCTIONS[cmd["opcode"]]
    slots = {s.name: s for s in ins.slots}
    for k, name in enumerate(TILE_SLOTS):
        span = tile_span(tile_view(cmd, name, slots[name].role)) if name in slots else None
        lo, hi = ub_units(*span) if span else (0, 0)
        ctx.set(fp.ub[k].valid, span is not None)
        ctx.set(fp.ub[k].lo, lo)
        ctx.set(fp.ub[k].hi, hi)
    ctx.set(fp.ub_write, any(s.writes for s in ins.slots))
    a = access(cmd)
    gm = (a.gm_reads + a.gm_writes) or (None,)
    ctx.set(fp.gm.valid, gm[0] is not None)
    ctx.set(fp.gm.lo, gm[0][0] if gm[0] else 0)
    ctx.set(fp.gm.hi, gm[0][1] if gm[0] else 0)
    ctx.set(fp.gm_write, bool(a.gm_writes))
