"""Builds the one C extension: the exact search of the offset solver."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "arenaplan.allocation._search",
            sources=["src/arenaplan/allocation/_search.c"],
            extra_compile_args=["-O2", "-std=c99"],
        )
    ]
)
