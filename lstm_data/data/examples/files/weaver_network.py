"""A small jet classifier for weaver-core's ``--network-config``, to try ``lstm-data weaver``.

``lstm-data example weaver examples`` writes it next to ``jets.root`` and
``JetClass_full.yaml``. weaver-core imports this file and calls ``get_model`` and
``get_loss``; the model takes the config's inputs in order (``pf_points``,
``pf_features``, ``pf_vectors``, ``pf_mask``, each ``(N, C, P)``) and returns one
score per class. Each particle's features pass through a small per-particle network,
are averaged over the real particles (``pf_mask``), and a linear layer scores the
classes: a few thousand parameters, quick on a CPU. Replace it by your own network.
"""
from __future__ import annotations

from typing import Any

import torch


class MaskedMeanNet(torch.nn.Module):
    """Per-particle layers, a mean over the particles the mask keeps, and a linear scorer."""

    def __init__(self, n_features: int, n_classes: int, width: int = 32) -> None:
        super().__init__()
        self.particles = torch.nn.Sequential(
            torch.nn.Conv1d(n_features, width, kernel_size=1), torch.nn.ReLU(),
            torch.nn.Conv1d(width, width, kernel_size=1), torch.nn.ReLU())
        self.scores = torch.nn.Linear(width, n_classes)

    def forward(self, points: torch.Tensor, features: torch.Tensor, vectors: torch.Tensor,
                mask: torch.Tensor) -> torch.Tensor:
        hidden = self.particles(features) * mask                     # (N, width, P), padding zeroed
        mean = hidden.sum(dim=2) / mask.sum(dim=2).clamp(min=1.0)    # a jet without particles: zeros
        scores: torch.Tensor = self.scores(mean)
        return scores


def get_model(data_config: Any, **kwargs: Any) -> tuple[torch.nn.Module, dict[str, Any]]:
    """The model and what weaver-core records of it (names, shapes and dynamic axes of its inputs)."""
    n_features = len(data_config.input_dicts["pf_features"])
    model = MaskedMeanNet(n_features, len(data_config.label_value), **kwargs)
    model_info = {
        "input_names": list(data_config.input_names),
        "input_shapes": {k: ((1,) + s[1:]) for k, s in data_config.input_shapes.items()},
        "output_names": ["softmax"],
        "dynamic_axes": {**{k: {0: "N", 2: "n_" + k.split("_")[0]} for k in data_config.input_names},
                         "softmax": {0: "N"}},
    }
    return model, model_info


def get_loss(data_config: Any, **kwargs: Any) -> torch.nn.Module:
    """Cross entropy over the classes of the config's labels."""
    return torch.nn.CrossEntropyLoss()
