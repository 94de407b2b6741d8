"""What a plan costs: memory traffic, the time model and its calibration from profiler
logs. Every figure from here is an estimate.

- ``traffic`` (with ``traffic_counts``, ``traffic_kernel``, ``traffic_tflm``,
  ``traffic_cascade``, ``traffic_fixed``, ``traffic_compare``): loads and stores per
  operator and tensor of TFLM's reference kernels and of ``ARENAPLAN_CASCADE``, in
  accesses and bytes of one invoke; ``traffic_xcore``: the same for xcore.ai's lib_nn
  kernels;
- ``roofline``: work per operator (MACs or output elements) and its time in seconds,
  the larger of compute and memory transfer;
- ``timing``: operator time in cycles (and seconds) as compute plus memory stalls;
- ``calibration``: a target's rates and latencies fitted to measured times
  (``profile_log`` reads TFLM's MicroProfiler logs: measured ticks).

Measured tables are data files in ``data/``, each with the script that writes it
named in its header (``generated_by``) and in the module that reads it.
"""
