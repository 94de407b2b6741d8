"""One module per sub-command: ``register`` adds its parser, ``run`` does the work."""
