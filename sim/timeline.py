"""A program's run as a timeline: each instruction a bar in its pipe's lane over cycles, each pipe's utilization.

``python -m sim run P.pto --timeline T.png`` draws the RTL run of a program's commands back to back (the run
its total cycles are measured on; ``Driver.schedule`` gives each command's acceptance, its engine's start
(the response's ``queued`` after it) and its end, the edge that raises its response): a bar from the start
to the end, the time it waited before (the checker, its pipe's queue, hazards) a thin line from its
acceptance. The lanes are the pipes of ``rtl.isa.Pipe`` (GM -> UB, UB -> GM, vector, matrix), as Ascend's
and Neuron's profilers show their engines; a pipe's utilization is the share of the program's cycles in
which at least one of its instructions was running (from its engine's start). TSYNC, in no pipe, is a dashed
line where it answers. On the serial unit the bars never overlap and the utilizations add up to at most 100%:
the figure shows what running the pipes at once (issue #33) has to gain. On a concurrent unit a pipe's
instructions in flight at once (queued behind each other, or overlapping in their engine) are drawn in rows of
their lane (up to ``MAX_ROWS``), so each bar stays visible.
"""

from rtl.isa import INSTRUCTIONS, Opcode, Pipe

__all__ = ["utilization", "overlapping", "draw"]

#: One colour per pipe (matplotlib's tab10).
COLOURS = {Pipe.GM_TO_UB: "tab:blue", Pipe.UB_TO_GM: "tab:green", Pipe.VECTOR: "tab:orange",
           Pipe.MATRIX: "tab:purple"}


def _pipe(opcode):
    return INSTRUCTIONS[Opcode(opcode)].pipe


def utilization(schedule, accepted=None):
    """``{pipe: busy share}`` of a schedule ``[(opcode, start, end)]``: the cycles of ``[first start, last
    end)`` (with ``accepted``, the instructions' acceptance cycles: ``[first acceptance, last end)``, the
    program's cycles) in which an instruction of the pipe runs, over all of them (0 for a pipe with none; an
    empty schedule gives zeros)."""
    out = {pipe: 0.0 for pipe in Pipe}
    if not schedule:
        return out
    t0 = min(accepted) if accepted else min(s for _, s, _ in schedule)
    total = max(e for _, _, e in schedule) - t0
    for pipe in Pipe:
        spans = sorted((s, e) for op, s, e in schedule if _pipe(op) == pipe)
        busy, reach = 0, t0
        for s, e in spans:                      # the union of the pipe's intervals
            s = max(s, reach)
            if e > s:
                busy += e - s
                reach = e
        out[pipe] = busy / total if total else 0.0
    return out


def overlapping(schedule):
    """``(overlapped, counted)`` of a schedule ``[(opcode, start, end)]``: of the ``counted`` instructions in a
    pipe (TSYNC is in none), how many ran while an instruction of another pipe ran (their ``[start, end)``
    share a cycle): the share of a program that ran concurrently (issue #33's fuzz figure; 0 while the unit
    runs one instruction at a time). Only the time an instruction runs counts, from its engine's start: not
    the time it waits in a queue, and not an instruction no engine ran (start = end: rejected)."""
    items = [(s, e, _pipe(op)) for op, s, e in schedule if _pipe(op) is not None]
    hit = 0
    for s, e, pipe in items:
        hit += s < e and any(s2 < e and s < e2 for s2, e2, p2 in items if p2 != pipe and s2 < e2)
    return hit, len(items)


#: Rows a lane is split into at most: instructions of one pipe in flight at once (queued or running, on a unit
#: whose pipes run at once) take the lowest row free at their start, beyond it they share rows. 8 covers the
#: concurrent presets (a pipe's queue of ``pipe_queue_depth`` = 4, its running instruction and the front end's
#: ``RELEASED`` = 2).
MAX_ROWS = 8


def _rows(schedule, accepted=None):
    """Each instruction's row in its lane (the lowest whose last bar has ended by its start, or by its
    acceptance with ``accepted``: its wait line is drawn in the row too; modulo :data:`MAX_ROWS`) and each
    pipe's number of rows."""
    rows, depth, ends = [0] * len(schedule), {p: 1 for p in Pipe}, {p: [] for p in Pipe}
    begin = list(accepted) if accepted is not None else [s for _, s, _ in schedule]
    for k in sorted(range(len(schedule)), key=lambda k: begin[k]):
        op, _, end = schedule[k]
        start = begin[k]
        pipe = _pipe(op)
        if pipe is None:
            continue
        free = [r for r, e in enumerate(ends[pipe]) if e <= start]
        r = free[0] if free else len(ends[pipe])
        if r == len(ends[pipe]):
            ends[pipe].append(end)
        ends[pipe][r] = end
        rows[k] = r % MAX_ROWS
        depth[pipe] = min(MAX_ROWS, max(depth[pipe], r + 1))
    return rows, depth


def draw(schedule, path, *, title="", labels=None, accepted=None):
    """Write the timeline of ``schedule`` (``[(opcode, start, end)]``, cycles) to ``path`` (PNG); ``labels``:
    the bars' texts (default: the opcodes' names); ``accepted``: each instruction's acceptance cycle, its wait
    drawn as a thin line up to its bar (default: none drawn). Returns :func:`utilization`."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    util = utilization(schedule, accepted)
    lanes = list(Pipe)
    rows, depth = _rows(schedule, accepted)
    fig, ax = plt.subplots(figsize=(12, 1.2 + 0.7 * len(lanes) * max(1, max(depth.values()) / 3)))
    for k, (op, start, end) in enumerate(schedule):
        pipe = _pipe(op)
        text = labels[k] if labels else Opcode(op).name
        if pipe is None:                # TSYNC, in no pipe: a line across the lanes where it answers
            ax.axvline(end, color="black", linestyle="--", linewidth=0.8)
            ax.text(end, len(lanes) - 0.55, text, ha="right", va="bottom", rotation=90, fontsize=7)
            continue
        # a lane holds its pipe's instructions in flight at once in rows of their own
        h = 0.7 / depth[pipe]
        y = lanes.index(pipe) - 0.35 + rows[k] * h
        if accepted is not None and accepted[k] < start:
            ax.plot([accepted[k], start], [y + h / 2] * 2, color=COLOURS[pipe], linewidth=0.8, alpha=0.6)
        ax.broken_barh([(start, max(end - start, 1))], (y, h), facecolors=COLOURS[pipe],
                       edgecolor="black", linewidth=0.5)
        ax.text(start + (end - start) / 2, y + h / 2, text, ha="center", va="center",
                fontsize=7 if depth[pipe] < 3 else 5, clip_on=True)
    ax.set_yticks(range(len(lanes)), [f"{p.value}  {100 * util[p]:.0f}%" for p in lanes])
    ax.invert_yaxis()
    ax.set_xlabel("cycle")
    end = max((e for _, _, e in schedule), default=1)
    ax.set_xlim(0, end)
    ax.set_title(f"{title + ': ' if title else ''}{len(schedule)} instructions, {end} cycles "
                 "(lane: pipe, busy share; bar: start to response" + ("; line: waiting)" if accepted is not None
                                                                     else ")"), fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return util
