"""Builds the C extensions: the exact search of the offset solver, the sweep
first-fit of large problems, the tiling rebuild's rules, the CSV reader and
writer and the solution checker."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "arenaplan.allocation._search",
            sources=["src/arenaplan/allocation/_search.c"],
            depends=["src/arenaplan/allocation/_native.h"],
            extra_compile_args=["-O2", "-std=c99"],
        ),
        Extension(
            "arenaplan.allocation._sweep",
            sources=["src/arenaplan/allocation/_sweep.c"],
            depends=["src/arenaplan/allocation/_native.h"],
            extra_compile_args=["-O2", "-std=c99"],
        ),
        Extension(
            "arenaplan.allocation._tiling",
            sources=["src/arenaplan/allocation/_tiling.c"],
            depends=["src/arenaplan/allocation/_native.h"],
            extra_compile_args=["-O2", "-std=c99"],
        ),
        Extension(
            "arenaplan.allocation._csvread",
            sources=["src/arenaplan/allocation/_csvread.c"],
            extra_compile_args=["-O2", "-std=c99"],
        ),
        Extension(
            "arenaplan.allocation._csvwrite",
            sources=["src/arenaplan/allocation/_csvwrite.c"],
            extra_compile_args=["-O2", "-std=c99"],
        ),
        Extension(
            "arenaplan.allocation._check",
            sources=["src/arenaplan/allocation/_check.c"],
            extra_compile_args=["-O2", "-std=c99"],
        ),
    ]
)
