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
from importlib.metadata import entry_points
from typing import Any, Callable, Mapping, Protocol, Sequence

import numpy as np

from lstm_data._util.declared import suggest
from lstm_data.batching.order.plan import Stage
from lstm_data.batching.order.rows_view import RowsView
from lstm_data.batching.spec.batch_spec import BatchSpec
from lstm_data.batching.spec.outputs import ResolvedField
from lstm_data.errors import OptionError

__all__ = ["PlanContext", "OrderSettings", "Policy", "PolicyTable", "register_policy", "registered_policies", "find_policy",
           "check_policies", "ENTRY_POINT_GROUP"]

#: the entry-point group an installed package declares its policies in (``name = "module:make"``)
ENTRY_POINT_GROUP = "lstm_data.policies"


class OrderSettings(Protocol):
    """The settings of an :class:`~lstm_data.batching.order.options.Order` a policy reads (an ``Order`` is one)."""

    @property
    def batch_size(self) -> int: ...

    @property
    def shuffle(self) -> bool | str: ...

    @property
    def seed(self) -> int | None: ...

    @property
    def drop_last(self) -> bool: ...

    @property
    def bucket_by(self) -> str | None: ...

    @property
    def bucket_window(self) -> int: ...

    @property
    def block_rows(self) -> int | None: ...

    @property
    def window_rows(self) -> int | None: ...

    @property
    def max_elements(self) -> int | None: ...

    @property
    def bucket_lengths(self) -> str | Sequence[int] | None: ...

    @property
    def max_shapes(self) -> int: ...

    @property
    def sample(self) -> Mapping[str, object] | None: ...


@dataclass(frozen=True)
class PlanContext:
    """What a policy's stage is made from: the order, the rows it plans, the spec's outputs.

    Attributes
    ----------
    order
        The :class:`~lstm_data.batching.order.options.Order` (``shuffle`` and ``seed`` resolved).
    rows
        The rows the plans order (:class:`~lstm_data.batching.order.rows_view.RowsView`):
        ``rows.n_rows``, ``rows.lengths(group)``, ``rows.column(name)``, ``rows.file_bounds``,
        ``rows.blocks(...)``, each by view position (plan positions are view positions).
    spec, fields
        The :class:`~lstm_data.batching.spec.batch_spec.BatchSpec` and its outputs resolved
        on the data (with ``bucket_by``, its group already padded per batch).
    width
        The padded width of an output in a batch whose longest row has ``n`` elements
        (``(field, n) -> width``: ``max_len``, ``pad_to_multiple_of``).
    options
        The policy's table of ``Order.policies`` (empty for the built-in policies).
    """

    order: OrderSettings
    rows: RowsView
    spec: BatchSpec
    fields: Sequence[ResolvedField]
    width: Callable[[ResolvedField, int], int]
    options: Mapping[str, object] = field(default_factory=dict)

    @property
    def n_rows(self) -> int:
        """Rows of the view the plans order."""
        return self.rows.n_rows

    def lengths(self, group: str) -> np.ndarray:
        """Row lengths of ``group`` by view position."""
        return self.rows.lengths(group)


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
    if int(rank) < 0 and not builtin:
        raise OptionError(f"policy {name!r}: rank must be >= 0 (the epoch's rows come first), got {rank!r}")
    _POLICIES[name] = Policy(name, make, int(rank), bool(builtin))


def registered_policies() -> list[Policy]:
    """Every registered policy, by rank (then name)."""
    return sorted(_POLICIES.values(), key=lambda p: (p.rank, p.name))


def find_policy(name: str) -> Policy:
    """The policy registered as ``name``, or the one an installed package declares under that name.

    A name is looked up among the policies registered in this process, then among the
    entry points of the group ``lstm_data.policies`` (``[project.entry-points."lstm_data.policies"]``
    of an installed package: a ``make`` function or a :class:`Policy`), which registers it. A
    name is never imported as a module: a spec, store or state file can only name a policy
    that code or an installed package registered.

    Raises
    ------
    OptionError
        No such policy, or a built-in one (those are asked for by the order's own fields).
    """
    policy = _POLICIES.get(name)
    if policy is None:
        declared = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
        if declared:
            loaded = declared[0].load()
            if isinstance(loaded, Policy):
                register_policy(name, loaded.make, rank=loaded.rank)
            elif callable(loaded):
                register_policy(name, loaded)
            else:
                raise OptionError(f"policies: the entry point {declared[0].value!r} of {name!r} in group "
                                  f"{ENTRY_POINT_GROUP!r} is neither a Policy nor a function PlanContext -> Stage")
            policy = _POLICIES[name]
    named = {p.name for p in _POLICIES.values() if not p.builtin}
    if policy is None or policy.builtin:
        known = ", ".join(sorted(named)) or "none registered"
        raise OptionError(f"policies: unknown order policy {name!r}{suggest(str(name), named)} "
                          f"(registered: {known}); register it in code with "
                          f"lstm_data.batching.order.registry.register_policy({name!r}, make) before the order "
                          f"is made, or declare it as an entry point of group {ENTRY_POINT_GROUP!r}")
    return policy


class PolicyTable(dict[str, dict[str, Any]]):
    """``Order.policies`` checked: each policy's name with its table of options.

    It also holds the :class:`Policy` objects the names resolved to, and pickles them (their
    ``make`` by its module and name, as pickle does functions): a pipeline sent to a spawned
    or forkserver worker runs the same policies there, registered or not in that process.
    As a mapping (equality, TOML) it is the plain table of options.
    """

    def __init__(self, options: Mapping[str, dict[str, Any]], policies: Mapping[str, Policy]) -> None:
        super().__init__(options)
        self.policies: dict[str, Policy] = {name: policies[name] for name in options}

    def __reduce__(self) -> tuple[Any, ...]:
        return (_unpickled_table, (dict(self), list(self.policies.values())))


def _unpickled_table(options: dict[str, dict[str, Any]], policies: list[Policy]) -> PolicyTable:
    for policy in policies:  # a spawned process knows them from now on, as the one that made the order
        _POLICIES.setdefault(policy.name, policy)
    return PolicyTable(options, {p.name: p for p in policies})


def check_policies(value: Any) -> PolicyTable:
    """``Order.policies`` checked: registered, non-built-in names, each with a table of options."""
    if not isinstance(value, Mapping):
        raise OptionError(f"policies must be a table of policy name -> options, got {value!r}")
    carried = value.policies if isinstance(value, PolicyTable) else {}
    out: dict[str, dict[str, Any]] = {}
    found: dict[str, Policy] = {}
    for name, options in value.items():
        if not isinstance(name, str):
            raise OptionError(f"policies: a policy's name must be a string, got {name!r}")
        found[name] = carried[name] if name in carried else find_policy(name)
        if not isinstance(options, Mapping):
            raise OptionError(f"policies.{name} must be a table of options, got {options!r}")
        out[name] = dict(options)
    return PolicyTable(out, found)
