"""Builds the C extensions: the exact search of the offset solver, and the sweep
first-fit of large problems."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "arenaplan.allocation._search",
            sources=["src/arenaplan/allocation/_search.c"],
            extra_compile_args=["-O2", "-std=c99"],
        ),
        Extension(
            "arenaplan.allocation._sweep",
            sources=["src/arenaplan/allocation/_sweep.c"],
            extra_compile_args=["-O2", "-std=c99"],
        ),
    ]
)
