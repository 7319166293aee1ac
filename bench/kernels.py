#!/usr/bin/env python
"""Benchmark the compiled kernels against their baselines (same-run ratios).

Same as ``lstm-data bench --only kernels``. Usage: python bench/kernels.py [--quick] [--check]
"""
import sys

from lstm_data.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "--only", "kernels", *sys.argv[1:]]))
