"""The benchmark suite behind ``lstm-data bench`` and the ``bench/*.py`` scripts.

Each stage module measures our path and its baselines in the same run, reports
medians and ratios, and checks the ratios against floors.
"""
