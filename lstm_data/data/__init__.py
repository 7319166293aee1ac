"""The data model: a :class:`Dataset` of N rows, scalar columns and ragged groups.

Modules
-------
dataset
    :class:`Dataset` (the interface every reader returns) and :class:`InMemoryDataset`.
ragged
    :class:`RaggedGroup`: one group's interleaved ``values`` and ``offsets``.
concat
    :class:`ConcatDataset`: several datasets seen as one (multi-file).
shared
    Pickling of in-RAM datasets as memory-mapped ``.npy`` files (worker processes).
synthetic
    Seeded NOvA-like tables for tests, benchmarks and the shipped sample.
"""
from lstm_data.data.concat import ConcatDataset
from lstm_data.data.dataset import Dataset, InMemoryDataset
from lstm_data.data.ragged import RaggedGroup

__all__ = ["Dataset", "InMemoryDataset", "RaggedGroup", "ConcatDataset"]
