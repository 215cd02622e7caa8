"""The command front end's parts beside ``rtl.top.VectorUnit`` (which holds its state machine and the sharing of
the UB and AXI ports): today the per-pipe counters; the pipes' queues and the hazard scoreboard of issue #33
belong here too."""
