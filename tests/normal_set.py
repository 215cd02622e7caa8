"""Which cocotb regression entries (``sim.regress.REGRESSION``) the normal set (``make test``) runs.

An Icarus run of the whole unit costs seconds per thousand cycles, so the normal set keeps a representative
of each kind of run and marks the rest ``slow`` (``make test-slow`` and ``make sim`` run every entry):

- TLOAD/TSTORE, MGATHER and LOCAL_GATHER move bytes; a data type reaches them only as its element size, so
  the per-type runs keep one type per size: ``INT8``, ``FP16``, ``FP32``.
- The elementwise family's per-type runs keep the same three (integer, half and single float); every
  type x opcode of the family stays bit-exact on the RTL in tests/rtl/test_rtl_elementwise.py
  (``test_every_type``), and the float specials of every float type in ``ew_float_specials``.
"""

import pytest

from sim.regress import GROUP_SIZE, batches

#: The per-type runs the normal set keeps (one type per element size).
NORMAL_DTYPES = ("INT8", "FP16", "FP32")


def split(entries, normal):
    """pytest parameters for ``entries`` (id: the entry's name): those whose name is in ``normal`` as they
    are, every other one marked ``slow``. A name in ``normal`` that no entry has is an error."""
    entries = list(entries)
    unknown = set(normal) - {e.name for e in entries}
    if unknown:
        raise ValueError(f"normal-set names not in the regression: {sorted(unknown)}")
    return [pytest.param(e, id=e.name, marks=() if e.name in normal else pytest.mark.slow) for e in entries]


def per_type(prefix, entries, slow=()):
    """``split`` keeping every entry that is not a per-type run ``<prefix>_<DTYPE>`` or named in ``slow``,
    and the per-type runs of :data:`NORMAL_DTYPES`."""
    from rtl.isa import DType
    entries = list(entries)
    typed = {f"{prefix}_{d.name}" for d in DType}
    unknown = set(slow) - {e.name for e in entries}
    if unknown:
        raise ValueError(f"slow names not in the regression: {sorted(unknown)}")
    keep = {e.name for e in entries if e.name not in typed and e.name not in slow}
    return split(entries, keep | {f"{prefix}_{d}" for d in NORMAL_DTYPES})


def grouped(params, size=GROUP_SIZE):
    """pytest parameters of *lists* of entries: the normal-set entries of ``params`` (``pytest.param`` s of
    one entry, as :func:`split` makes them, or entries) as ``sim.regress.batches`` runs them (at most
    ``size`` consecutive ones that take no parameters to a simulator run,
    the marked entries between them skipped over; id: their names joined by ``+``, so ``-k <name>`` still
    selects one), then every marked (``slow``) entry as a list of one, with its marks."""
    plain, marked = [], []
    for p in params:
        entry, marks = (p.values[0], p.marks) if hasattr(p, "values") else (p, ())
        if marks:
            marked.append(pytest.param([entry], id=entry.name, marks=marks))
        else:
            plain.append(entry)
    return [pytest.param(b, id="+".join(e.name for e in b)) for b in batches(plain, size)] + marked


def run_entries(entries, config="small"):
    """Run ``entries`` (one: ``sim.regress.run_entry``, with its waves directory as ``make sim`` names it;
    several: one ``run_group``) on ``config``; fails naming each entry that failed and the log."""
    from sim.regress import run_entry, run_group
    if len(entries) == 1:
        result = run_entry(entries[0], config=config)
        assert result.passed, f"{entries[0].name} ({config}) failed: see {result.log_file}\n{result.summary()}"
        return
    result, failures = run_group(entries, config=config)
    assert not failures, (f"{len(failures)} of {len(entries)} failed ({config}; log: {result.log_file}):\n"
                          + "\n".join(f"  {e.name}: {why}" for e, why in failures))
