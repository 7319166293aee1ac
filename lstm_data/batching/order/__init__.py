"""How rows are ordered and cut into batches: :class:`~lstm_data.batching.order.options.Order` and its plans.

Above the spec stage, below building. Each epoch's order is a plan (rows in batch order and
the batch bounds) made by the order's stages.

Modules
-------
options
    :class:`Order`, the declared order of a run.
rows, sampling, bucketing, bucket_lengths, budget
    Seeded shuffles and block plans, class-balanced draws, length bucketing and its widths,
    the element budget.
splits, stats
    Train/validation splits and folds; the order's report.
"""
