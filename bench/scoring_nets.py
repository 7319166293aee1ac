"""The networks of the scoring bench, and weaver-core's network config of them (``get_model``).

``ParticleNetLite``: two EdgeConv blocks (k = 7 nearest neighbours in (eta, phi), 32 and 64
channels, three 1x1 convolutions each, as ParticleNet-Lite's ``conv_params``), global
average pooling and a 128-unit layer (its ``fc_params``): about 28k parameters, on CPU.
``Trivial``: the mean of the particle features into one linear layer (a loader-bound run).
Both take weaver's inputs ``(pf_points, pf_features, pf_vectors, pf_mask)`` and give the
softmax over the labels.
"""
from __future__ import annotations

from typing import Any

import torch
from torch import nn


def _knn(points: torch.Tensor, k: int) -> torch.Tensor:
    """Indices ``(B, P, k)`` of each particle's ``k`` nearest neighbours (itself left out)."""
    inner = -2 * torch.matmul(points.transpose(2, 1), points)
    square = (points ** 2).sum(dim=1, keepdim=True)
    distance = square.transpose(2, 1) + inner + square
    return distance.topk(k + 1, dim=-1, largest=False)[1][:, :, 1:]


class EdgeConv(nn.Module):
    def __init__(self, k: int, inputs: int, channels: tuple[int, ...]) -> None:
        super().__init__()
        self.k = k
        layers: list[nn.Module] = []
        width = 2 * inputs
        for c in channels:
            layers += [nn.Conv2d(width, c, 1, bias=False), nn.BatchNorm2d(c), nn.ReLU()]
            width = c
        self.convs = nn.Sequential(*layers)
        self.shortcut = nn.Sequential(nn.Conv1d(inputs, channels[-1], 1, bias=False), nn.BatchNorm1d(channels[-1]))

    def forward(self, points: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        b, c, p = features.shape
        idx = _knn(points, self.k)  # (B, P, k)
        flat = (idx + torch.arange(b).view(-1, 1, 1) * p).reshape(-1)
        neighbours = features.transpose(2, 1).reshape(b * p, c)[flat].view(b, p, self.k, c).permute(0, 3, 1, 2)
        centre = features.unsqueeze(-1).expand(-1, -1, -1, self.k)
        edges = torch.cat([centre, neighbours - centre], dim=1)
        out = self.convs(edges).mean(dim=-1)
        return torch.relu(out + self.shortcut(features))


class ParticleNetLite(nn.Module):
    def __init__(self, features: int = 17, classes: int = 10) -> None:
        super().__init__()
        self.bn = nn.BatchNorm1d(features)
        self.edge1 = EdgeConv(7, features, (32, 32, 32))
        self.edge2 = EdgeConv(7, 32, (64, 64, 64))
        self.head = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, classes))

    def forward(self, points: torch.Tensor, features: torch.Tensor, vectors: torch.Tensor,
                mask: torch.Tensor) -> torch.Tensor:
        shift = (mask == 0).float() * 1e9  # padded particles far away: never a neighbour
        x = self.bn(features) * mask
        a = self.edge1(points + shift, x) * mask
        b = self.edge2(a + shift, a) * mask
        pooled = b.sum(dim=-1) / mask.sum(dim=-1).clamp(min=1)
        return torch.softmax(self.head(pooled), dim=1)


class Trivial(nn.Module):
    def __init__(self, features: int = 17, classes: int = 10) -> None:
        super().__init__()
        self.fc = nn.Linear(features, classes)

    def forward(self, points: torch.Tensor, features: torch.Tensor, vectors: torch.Tensor,
                mask: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.fc(features.mean(dim=-1)), dim=1)


NETS = {"particlenet_lite": ParticleNetLite, "trivial": Trivial}


def make(net: str) -> nn.Module:
    """A network of :data:`NETS`, with fixed weights, in eval mode."""
    torch.manual_seed(0)
    return NETS[net]().eval()


def get_model(data_config: Any, **kwargs: Any) -> tuple[nn.Module, dict[str, Any]]:
    """weaver-core's network config: ``--network-option net "'trivial'"``."""
    model = make(kwargs.get("net", "trivial"))
    info = {"input_names": list(data_config.input_names),
            "input_shapes": {k: ((1,) + s[1:]) for k, s in data_config.input_shapes.items()},
            "output_names": ["softmax"], "dynamic_axes": {}}
    return model, info


def get_loss(data_config: Any, **kwargs: Any) -> nn.Module:
    return nn.CrossEntropyLoss()
