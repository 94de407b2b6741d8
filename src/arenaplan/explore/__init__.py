"""Design-space sweeps: models x targets x memory sizes x options, on one machine or a
Ray cluster (``tasks``: one task and its row; ``grid``: the tasks of a sweep;
``backends``: where they run; ``store``: results that last; ``report``: the page)."""
