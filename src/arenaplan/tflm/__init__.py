"""What TFLM and its kernels do to memory, restated from their sources: tail (persistent
arena) allocations and struct sizes, scratch requests (reference and CMSIS-NN), refusals,
in-place rules, kernel sets and tensor sizes. Nothing here plans; the planner asks."""
