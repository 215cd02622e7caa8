"""ECP5 synthesis of one block of an engine alone: ``python -m flow.blocks lanes ...`` (the elementwise
lanes, or one of their fp units at the lanes' depths), ``python -m flow.blocks gemv ...`` (the GEMV MAC
array and reducer, together or apart) and ``python -m flow.blocks frontend ...`` (the footprint, the hazard
scoreboard, the per-pipe dispatcher) and ``python -m flow.blocks ub ...`` (the unified buffer, any number of
read ports, or ``--what arbiter``: the write port's arbiter). Ports registered, platform ``rtl.fpga.ECP5``, the whole unit's
yosys / nextpnr flow (:func:`flow.fp.synth_component`); results under ``--out``."""

import argparse
import sys

from amaranth import Module
from amaranth.lib import wiring

from flow.fp import Bare, synth_component
from flow.synth import config_from
from flow.tools import ToolError

__all__ = ["MacReduce", "main"]


class MacReduce(wiring.Component):
    """:class:`rtl.engines.gemv.mac.MacArray` feeding a :class:`rtl.engines.gemv.reduce.Reducer` as in the
    engine (``fin_*``), for a synthesis of the two alone: the array's inputs, the reducer's ``present`` /
    ``acc_int`` / ``has_init`` / ``init`` / ``result`` / ``bank_free`` are the ports."""

    def __init__(self, config):
        from rtl.engines.gemv.mac import MacArray
        from rtl.engines.gemv.reduce import Reducer
        self.mac, self.red = MacArray(config), Reducer(config)
        sig = {k: v for k, v in self.mac.signature.members.items() if not k.startswith("fin_")}
        sig.update({k: v for k, v in self.red.signature.members.items()
                    if not k.startswith("fin_") and k != "acc_int"})
        super().__init__(sig)

    def elaborate(self, platform):
        m = Module()
        m.submodules.mac, m.submodules.red = mac, red = self.mac, self.red
        for k in ("fin_valid", "fin_q", "fin_bank", "fin_last", "fin_data"):
            m.d.comb += getattr(red, k).eq(getattr(mac, k))
        for k in ("valid", "tag", "a", "b", "a_kind", "b_kind", "acc_int"):
            m.d.comb += getattr(mac, k).eq(getattr(self, k))
        m.d.comb += [red.acc_int.eq(self.acc_int), red.present.eq(self.present), red.has_init.eq(self.has_init),
                     self.bank_free.eq(red.bank_free)]
        wiring.connect(m, wiring.flipped(self.init), red.init)
        wiring.connect(m, red.result, wiring.flipped(self.result))
        return m


def _lanes(args):
    """The elementwise lanes (``--what lanes``) or one fp unit at the lanes' depths."""
    from rtl.engines.elementwise.lanes import ElementwiseLanes
    from rtl.fp import BF16, FP16, FP32, FPConvert, FPMul, FPMulWiden
    depths = {k: int(v) for k, v in (kv.split("=") for kv in args.depths.split(",") if kv)}
    if args.what == "lanes":
        top = ElementwiseLanes(args.word_bytes, **depths)
    else:
        d = depths.get("mul_depth", 6)
        dn = depths.get("narrow_depth", 2)
        top = Bare({"mul32": lambda: FPMul(FP32, d), "widen16": lambda: FPMulWiden(FP16, d),
                    "widenbf16": lambda: FPMulWiden(BF16, d),
                    "narrow16": lambda: FPConvert(FP32, dn, out_fmt=FP16),
                    "narrowbf16": lambda: FPConvert(FP32, dn, out_fmt=BF16)}[args.what]())
    return top, f"{args.what}_w{args.word_bytes}_{args.depths.replace('=', '').replace(',', '_')}"


def _gemv(args):
    """The MAC array and the reducer, together (``both``) or apart."""
    from rtl.engines.gemv.mac import MacArray
    from rtl.engines.gemv.reduce import Reducer
    config, overrides = config_from(args.config, args.set)
    top = {"both": MacReduce, "mac": MacArray, "reduce": Reducer}[args.what](config)
    return top, "_".join([args.what, args.config] + [f"{k}{v}" for k, v in sorted(overrides.items())])


def _frontend(args):
    """The concurrency parts of the front end (rtl/frontend): the footprint, the scoreboard, the
    dispatcher (queues and scoreboard, an engine's payload the command), or the whole front end
    (:class:`rtl.frontend.pipe_front.PipeFrontEnd`, its engine ports the block's ports)."""
    from rtl.frontend.dispatch import Dispatcher
    from rtl.frontend.footprint import Footprint
    from rtl.frontend.scoreboard import Scoreboard
    from rtl.isa import Command
    config, overrides = config_from(args.config, args.set)

    def whole():
        # (as the concurrent unit builds it; its queues and entries are the configuration's)
        from rtl.concurrent import concurrent_engines, front_end
        from rtl.top import engines_for
        return front_end(config, concurrent_engines(engines_for(config)))
    top = {"footprint": lambda: Footprint(config),
           "front": whole,
           "scoreboard": lambda: Scoreboard(config, args.entries),
           "dispatch": lambda: Dispatcher(config, Command, depth=args.depth, entries=args.entries)}[args.what]()
    return top, "_".join([args.what, args.config, f"e{args.entries}", f"d{args.depth}"] +
                         [f"{k}{v}" for k, v in sorted(overrides.items())])


def _ub(args):
    """The unified buffer alone (its read ports: ``--set ub_read_ports=N``), for the UB port choices, or the
    write port's arbiter for ``--writers`` writers (``--what arbiter``)."""
    from rtl.ub.buffer import UnifiedBuffer
    from rtl.ub.write_arbiter import UbWriteArbiter
    config, overrides = config_from(args.config, args.set)
    sets = [f"{k}{v}" for k, v in sorted(overrides.items())]
    if args.what == "arbiter":
        return UbWriteArbiter(config, args.writers), "_".join(["ub_arbiter", args.config, f"w{args.writers}"] + sets)
    return UnifiedBuffer(config), "_".join(["ub", args.config] + sets)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    blocks = ap.add_subparsers(dest="block", required=True)
    lanes = blocks.add_parser("lanes", help="the elementwise lanes, or one of their fp units")
    lanes.add_argument("--word-bytes", type=int, default=4)
    lanes.add_argument("--what", default="lanes", choices=("lanes", "mul32", "widen16", "widenbf16", "narrow16",
                                                           "narrowbf16"))
    lanes.add_argument("--depths", default="", help="e.g. widen_depth=2,add_depth=6,mul_depth=6,narrow_depth=2")
    lanes.set_defaults(build=_lanes, out="build/ew/pnr")
    gemv = blocks.add_parser("gemv", help="the GEMV MAC array and reducer")
    gemv.add_argument("--config", default="small")
    gemv.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    gemv.add_argument("--what", default="both", choices=("both", "mac", "reduce"))
    gemv.set_defaults(build=_gemv, out="build/gemv/pnr")
    front = blocks.add_parser("frontend", help="the footprint, the hazard scoreboard, the per-pipe dispatcher")
    front.add_argument("--config", default="default")
    front.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    front.add_argument("--what", default="dispatch", choices=("footprint", "scoreboard", "dispatch", "front"),
                       help="front: the whole front end of the concurrent unit (checker, footprint, dispatcher, "
                            "response queues, the pipes' start and release logic; its entries and queue depth are "
                            "the configuration's, --set pipe_entries=N / pipe_queue_depth=N)")
    front.add_argument("--entries", type=int, default=8, help="scoreboard entries (default: %(default)s)")
    front.add_argument("--depth", type=int, default=4, help="each pipe's queue (default: %(default)s)")
    front.set_defaults(build=_frontend, out="build/frontend/pnr")
    ub = blocks.add_parser("ub", help="the unified buffer (e.g. --set ub_read_ports=3), or its write arbiter")
    ub.add_argument("--config", default="default")
    ub.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    ub.add_argument("--what", default="buffer", choices=("buffer", "arbiter"))
    ub.add_argument("--writers", type=int, default=4, help="the arbiter's writers (default: %(default)s)")
    ub.set_defaults(build=_ub, out="build/ub/pnr")
    for p in (lanes, gemv, front, ub):
        p.add_argument("--out", help="result directory (default: build/<block>/pnr)")
        p.add_argument("--seed", type=int, default=1)
        p.add_argument("--tag", default="", help="suffix of the result's name (e.g. a variant being tried)")
        p.add_argument("--threads", type=int, default=1, help="nextpnr threads (default: %(default)s)")
        p.add_argument("--no-tmg-ripup", action="store_true",
                       help="route without --tmg-ripup (flow.synth.nextpnr_options): router2 stops once no "
                            "wire is overused; the result's name ends in _notmg")
    args = ap.parse_args(argv)
    top, name = args.build(args)
    name = f"{name}_s{args.seed}{args.tag}{'_notmg' if args.no_tmg_ripup else ''}"
    try:
        synth_component(top, name, args.seed, args.out, threads=args.threads, tmg_ripup=not args.no_tmg_ripup)
    except ToolError as e:
        print(name, "failed:", str(e).splitlines()[0])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
