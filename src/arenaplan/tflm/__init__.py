"""TFLM as a runtime: what TFLM and its kernels do to memory, restated from their
sources, and TFLM's side of a plan (its validator, writer and provers). Nothing here
plans; the planner asks, through ``runtime.py`` (the ``Runtime`` the registry finds)
and nothing else.

Facts are organised as TFLM organises its code, so that auditing one operator means
reading one module against one kernel source:

- ``kernels/``: TFLM's reference kernels (``tensorflow/lite/micro/kernels/``), one
  module per kernel family (``conv.py`` restates ``conv.cc`` and ``conv_common.cc``).
  Each names the source files it restates in its docstring and states, per
  operator, one ``facts.Kernel``: tail rule (options struct, Init, Prepare), scratch
  requests, refusals and in-place rule, side by side.
- ``cmsis_nn/``: TFLM's CMSIS-NN kernels, one module per file of
  ``kernels/cmsis_nn/`` (``cmsis_nn/conv.py`` restates ``kernels/cmsis_nn/conv.cc``),
  plus ``buffer_sizes.py`` for CMSIS-NN's own ``*_get_buffer_size`` functions. They
  are modules of their own, not a section of the family module, because TFLM's
  build swaps the whole file: with ``OPTIMIZED_KERNEL_DIR=cmsis_nn`` a file of
  ``kernels/cmsis_nn/`` replaces the ``kernels/`` file of its name
  (``tools/make/specialize_files.py``), with its own OpData, Prepare and Eval. A
  CMSIS-NN build's CONV_2D is ``cmsis_nn/conv.cc`` and nothing of ``conv.cc``, so
  its facts are read against that one file; each CMSIS-NN module states only what
  differs from the reference kernel and names the reference module it stands
  beside.
- ``facts.py``: the forms those statements take (``Kernel``, ``CmsisKernel``,
  ``OpRule``, ``InPlaceRule``, the refusal checks) and the views rules read.

The engines read the registries the packages assemble: ``tail`` (the tail
simulation, build profiles, smallest arena), ``scratch`` (scratch requests in TFLM's
order), ``refusals`` (what TFLM refuses), ``aliases`` (the in-place and view rules
per kernels variant; ``alias_candidates`` finds where a model meets them),
``lifetimes`` (TFLM's scopes). Beside them: ``kernel_sets`` (the kernels variants),
``sizes`` (tensor bytes), ``structs`` (struct sizes, measured:
``data/tail_structs.json``), ``cascade_steps`` (what a cascade's steps cost in a
CMSIS-NN build, measured: ``data/cascade_steps.json``).

TFLM's side of a plan: ``validate`` (the plan validator, code of its own),
``offline_plan`` (the plan written into the model), ``firmware`` (the arena header),
``planner_cpp`` (the split-arena planner), ``verify/`` (the PyPI runtime and the
builds from source run the models: proofs, ``arenaplan verify``, measured traffic and
instructions).
"""
