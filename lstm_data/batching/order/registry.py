"""The registry of order policies: each turns its part of an :class:`~lstm_data.batching.order.options.Order`
into a stage of the epoch's plan.

A policy is a name, a rank (where its stage goes: lower first) and a function that
makes its stage from a :class:`PlanContext`, or returns ``None`` when the order does
not ask for it. The built-in policies (sampling, bucketing, the element budget) read
their own ``Order`` fields; a policy registered by a user or a plug-in is asked for
by name in ``Order(policies={name: {options}})`` and reads its options from
:attr:`PlanContext.options`. :func:`~lstm_data.batching.order.policies.order_stages`
composes them. Adding a policy is one module that calls :func:`register_policy`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from lstm_data._util.declared import suggest
from lstm_data.batching.order.plan import Stage
from lstm_data.errors import OptionError

__all__ = ["PlanContext", "Policy", "register_policy", "registered_policies", "check_policies"]


@dataclass(frozen=True)
class PlanContext:
    """What a policy's stage may be made from.

    Attributes
    ----------
    order
        The :class:`~lstm_data.batching.order.options.Order` (``shuffle`` and ``seed`` resolved).
    n_rows
        Rows of the view the plans order.
    lengths
        Row lengths of a ragged group, by view position (``lengths(group)``).
    options
        The policy's table of ``Order.policies`` (empty for the built-in policies).
    parts
        Objects made from the data for the built-in policies (``"sampling"``, ``"budget"``,
        ``"bucketing"``, ``"blocks"``), each ``None`` when the order does not ask for it.
    """

    order: Any
    n_rows: int
    lengths: Callable[[str], np.ndarray]
    options: Mapping[str, Any] = field(default_factory=dict)
    parts: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Policy:
    """A registered order policy.

    Attributes
    ----------
    name
        Its name in ``Order.policies`` (built-in policies are not named there).
    make
        ``PlanContext -> Stage | None``.
    rank
        Stages run by rank, lowest first (the built-ins: sampling 10, bucketing 80, budget 90).
    builtin
        Made from the order's own fields, not from ``Order.policies``.
    """

    name: str
    make: Callable[[PlanContext], Stage | None]
    rank: int = 50
    builtin: bool = False


_POLICIES: dict[str, Policy] = {}


def register_policy(name: str, make: Callable[[PlanContext], Stage | None], *, rank: int = 50,
                    builtin: bool = False) -> None:
    """Register an order policy: ``Order(policies={name: {...}})`` then adds its stage.

    Parameters
    ----------
    name
        The policy's name; registering a name again replaces it.
    make
        Makes the stage from a :class:`PlanContext` (its ``options`` hold the policy's
        table); returns ``None`` when there is nothing to do, raises
        :class:`~lstm_data.errors.OptionError` for options it cannot honour.
    rank
        Where the stage goes among the others (lower first); the rows of the epoch
        (file order, shuffle or block plan) always come first.
    builtin
        For the library's own policies, made from the order's own fields.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise OptionError(f"an order policy's name must be an identifier, got {name!r}")
    _POLICIES[name] = Policy(name, make, int(rank), bool(builtin))


def registered_policies() -> list[Policy]:
    """Every registered policy, by rank (then name)."""
    return sorted(_POLICIES.values(), key=lambda p: (p.rank, p.name))


def check_policies(value: Any) -> dict[str, dict[str, Any]]:
    """``Order.policies`` checked: registered, non-built-in names, each with a table of options."""
    if not isinstance(value, Mapping):
        raise OptionError(f"policies must be a table of policy name -> options, got {value!r}")
    named = {p.name for p in _POLICIES.values() if not p.builtin}
    out: dict[str, dict[str, Any]] = {}
    for name, options in value.items():
        if name not in named:
            known = ", ".join(sorted(named)) or "none registered"
            raise OptionError(f"policies: unknown order policy {name!r}{suggest(str(name), named)} "
                              f"(registered: {known})")
        if not isinstance(options, Mapping):
            raise OptionError(f"policies.{name} must be a table of options, got {options!r}")
        out[str(name)] = dict(options)
    return out
