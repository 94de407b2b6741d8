"""The runtime seam: what the planner asks of the runtime a plan is for.

- ``spec``: what a plan is for, as values (``KernelSet``, ``Profile``, ``Deployment``);
- ``records``: what a runtime answers with (scratch requests, tail estimates, aliases);
- ``proof``: the record of a plan run in the real runtime;
- ``interface``: ``Runtime``, the one interface the pipeline talks to;
- ``registry``: the runtimes by name (TFLM built in) and the one parser of the
  spellings users type for kernels and profiles.

A runtime is a package beside this one (``arenaplan.tflm``) with a module holding its
``Runtime`` instance; nothing else in the planner imports it.
"""
