"""From dataset rows to one batch: the builder, block sources of on-disk data, empty rows and noise applied.

Above the order stage, below epochs.

Modules
-------
builder
    :class:`BatchBuilder`: one batch from dataset rows, in one kernel call.
blocks
    Block shuffle of on-disk data: windows of blocks read ahead and built from.
empty_rows, exactness
    ``Ragged(empty=...)`` applied to built batches; the integer rule of batch values.
"""
