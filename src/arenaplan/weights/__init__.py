"""Weights: where they are read (policies), how an operator's weights split into channel
groups (staging), the plan of their copies beside the activations, the staged blob and
the fetch schedule firmware runs."""
