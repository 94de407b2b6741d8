"""Analyses of the IR whose results live beside it: lifetimes, scratch, bounds."""
