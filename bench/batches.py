#!/usr/bin/env python
"""Benchmark batch building (full batch, threads, block shuffle on disk, precompute).

Same as ``lstm-data bench --only batches``. Usage: python bench/batches.py [--quick] [--check]
"""
import sys

from lstm_data.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "--only", "batches", *sys.argv[1:]]))
