"""Canonical PTO-AS text of a Program: AS Level 1 (SSA) for new results, Level 2 (DPS) for in-place writes,
``pto.tassign`` after each explicitly placed value's definition. ``parse(print_program(p))`` builds ``p`` again."""

from rtl.isa import OobMode, Status

from pto.program import signature

__all__ = ["print_program"]


def _attr(k, v):
    if k == "oob":
        return f"oob = #pto.oob<{OobMode(v).name.lower()}>"
    if k == "nepi_log2":
        return f"num_elem_per_idx = {1 << v}"
    if k == "num_valid":
        return f"num_valid_indices = {v}"
    if k == "expect":
        return f"expect = #pto.status<{Status(v).name.lower()}>"
    raise KeyError(k)


def _attrs(attrs):
    order = ("oob", "nepi_log2", "num_valid", "expect")
    items = [_attr(k, attrs[k]) for k in order if k in attrs]
    return f" {{{', '.join(items)}}}" if items else ""


def _tassign(v):
    b = v.buffer
    return f"  pto.tassign %{v.name}, @{'tile' if b.space == 'ub' else 'gm'}({b.addr:#x})"


def print_program(p):
    lines = []
    head = ", ".join(f"%{a.name}: {a.type}" for a in p.args)
    res = ", ".join(str(v.type) for v in p.outputs)
    attrs = ""
    if p.attrs:
        attrs = " attributes {" + ", ".join(f'{k} = "{v}"' for k, v in sorted(p.attrs.items())) + "}"
    lines.append(f"func.func @{p.name}({head}) -> ({res}){attrs} {{")
    placed = set()

    def place(v):
        if v.buffer.addr is not None and v.buffer.id not in placed:
            placed.add(v.buffer.id)
            lines.append(_tassign(v))

    for a in p.args:
        place(a)
    allocs = list(p.allocs)
    for ins in p.instrs:
        while allocs and allocs[0][0] <= ins.index:
            v = allocs.pop(0)[1]
            lines.append(f"  %{v.name} = pto.alloc_tile : {v.type}")
            place(v)
        sig = signature(ins.opcode)
        if sig.output is None:                      # tsync: no operand, no result
            lines.append(f"  pto.{ins.name}{_attrs(ins.attrs)}")
            continue
        ops = [ins.operands[s] for s, _, _ in sig.inputs]
        names = ", ".join(f"%{v.name}" for v in ops)
        types = ", ".join(str(v.type) for v in ops)
        if ins.inplace and ins.alias is None:
            lines.append(f"  pto.{ins.name} ins({names} : {types}) outs(%{ins.out.name} : {ins.out.type})"
                         f"{_attrs(ins.attrs)}")
        elif ins.alias is not None:
            lines.append(f"  %{ins.out.name} = pto.{ins.name} {names}, %{ins.alias.name}{_attrs(ins.attrs)} : "
                         f"({types}, {ins.out.type}) -> {ins.out.type}")
        else:
            lines.append(f"  %{ins.out.name} = pto.{ins.name} {names}{_attrs(ins.attrs)} : ({types}) -> {ins.out.type}")
        place(ins.out)
    for _, v in allocs:
        lines.append(f"  %{v.name} = pto.alloc_tile : {v.type}")
        place(v)
    if p.outputs:
        lines.append(f"  return {', '.join('%' + v.name for v in p.outputs)} : {res}")
    else:
        lines.append("  return")
    lines.append("}")
    return "\n".join(lines) + "\n"
