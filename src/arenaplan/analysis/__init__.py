"""Analyses of the IR whose results live beside it: the buffers the arena must hold, in
the order and alignment of the runtime the plan is for."""
