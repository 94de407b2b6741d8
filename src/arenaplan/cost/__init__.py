"""What a plan costs: memory traffic, the time model and its calibration from profiler
logs. Every figure from here is an estimate."""
