"""Testbench helpers for ``amaranth.lib.stream`` interfaces in Amaranth's simulator."""

import random


async def stream_put(ctx, stream, payload, *, rng=None, stall=0.0):
    """Send one transfer; with ``rng``, first idle for random cycles (probability ``stall`` each)."""
    while rng is not None and rng.random() < stall:
        await ctx.tick()
    ctx.set(stream.valid, 1)
    ctx.set(stream.payload, payload)
    await ctx.tick().until(stream.ready)
    ctx.set(stream.valid, 0)


async def stream_get(ctx, stream, *, rng=None, stall=0.0):
    """Receive one transfer and return its payload; with ``rng``, deassert ready at random."""
    while rng is not None and rng.random() < stall:
        ctx.set(stream.ready, 0)
        await ctx.tick()
    ctx.set(stream.ready, 1)
    payload, = await ctx.tick().sample(stream.payload).until(stream.valid)
    ctx.set(stream.ready, 0)
    return payload
