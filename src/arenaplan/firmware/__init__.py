"""The C++ sources a firmware compiles with TFLM: the ARENAPLAN_CASCADE kernel (docs/cascade.md)."""
