#!/usr/bin/env python
"""Benchmark file formats: lstm_ee HDF5 open vs naive per-row h5py, zarr open, on-disk take.

They run in the ``readers`` group, with the CSV reader: same as ``lstm-data bench --only
readers``. Usage: python bench/formats.py [--quick] [--check] [--json OUT]
"""
import sys

from lstm_data.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "--only", "readers", *sys.argv[1:]]))
