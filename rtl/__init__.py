"""Amaranth HDL for the tile vector unit. ``isa`` and ``status`` hold every encoding; ``config`` the parameters."""
