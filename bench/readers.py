#!/usr/bin/env python
"""Benchmark the readers: CSV (plain, .csv.xz) against pandas, lstm_ee's path and xz -dc, then
the HDF5 and zarr formats (same-run ratios).

Same as ``lstm-data bench --only readers``. Usage: python bench/readers.py [--quick] [--check]
"""
import sys

from lstm_data.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "--only", "readers", *sys.argv[1:]]))
