"""Type stub of the compiled ``formrows`` module: the row loop of ``pad`` and ``gather``, for C callers only."""
