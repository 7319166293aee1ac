"""The benchmark suite behind ``lstm-data bench``, run from a checkout of the repository.

Each stage module measures lstm_data's path and its baselines in the same run,
reports medians and ratios, and checks the ratios against ``floors.toml``.
The package is not installed with lstm_data: ``lstm-data bench`` (or
``python -m bench`` from the repository root) puts the repository root on
``sys.path`` and imports it as ``bench``.
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["REPO", "child_env"]

#: the repository root: the folder holding ``bench/`` (and ``lstm_data/`` in a checkout)
REPO = Path(__file__).resolve().parents[1]


def child_env() -> dict[str, str]:
    """The environment for a fresh interpreter that imports ``bench``: the repository root first
    on ``PYTHONPATH``, the rest of this process's environment unchanged."""
    paths = [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
