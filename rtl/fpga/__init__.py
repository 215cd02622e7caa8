"""What the RTL knows of the FPGA it may be built for: the ECP5 platform object and its global nets
(:mod:`rtl.fpga.platform`), and products in MULT18X18D blocks with their own registers
(:mod:`rtl.fpga.dsp`). Elaborated without a platform, the same logic is plain flip-flops and ``*``.
"""

from rtl.fpga.platform import ECP5, Ecp5Platform, global_net, is_ecp5

__all__ = ["ECP5", "Ecp5Platform", "global_net", "is_ecp5"]
