"""Analyses of the IR whose results live beside it: tensor lifetimes and the buffers the
arena must hold."""
