"""The outputs a :class:`~lstm_data.batching.spec.batch_spec.BatchSpec` declares.

An output's name, role, dtype and shape (:class:`OutputSignature`), and a field
mapped onto a dataset's columns (:class:`ResolvedField`, made by :func:`resolve_fields`
for :meth:`~lstm_data.batching.spec.batch_spec.BatchSpec.validate`). :mod:`lstm_data.batching.spec.batch_spec`
exports the classes and the suffixes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Mapping

import numpy as np

from lstm_data.batching.spec.fields import Field, Ragged, Scalars
from lstm_data.batching.spec.forms import LENGTHS_SUFFIX
from lstm_data.data.ragged import count_mismatch
from lstm_data.errors import SchemaError

if TYPE_CHECKING:
    from lstm_data.data.dataset import Dataset

__all__ = ["OutputSignature", "ResolvedField", "GroupColumns", "resolve_fields", "LENGTHS_SUFFIX",
           "WEIGHTS_SUFFIX"]

#: suffix of a target's weights in flat names
WEIGHTS_SUFFIX = "_weights"


@dataclass(frozen=True)
class OutputSignature:
    """Name, role, dtype and shape of one batch output; ``None`` dims vary per batch.

    The first dimension is the batch size ``B`` (``None``: the last batch may be short).
    """

    name: str
    role: str  # "input" | "target"
    dtype: np.dtype
    shape: tuple[int | None, ...]

    @property
    def sample_shape(self) -> tuple[int | None, ...]:
        """The shape without the batch dimension (what ``keras.Input(shape=...)`` takes)."""
        return self.shape[1:]


@dataclass(frozen=True)
class GroupColumns:
    """The variables of a ``Ragged`` field that one more group holds (its counts per row its own).

    Attributes
    ----------
    group
        The ragged group.
    columns
        Column indices of the variables inside ``group``.
    at
        The output column of each (its place in the field's ``vars``).
    """

    group: str
    columns: np.ndarray
    at: np.ndarray


@dataclass(frozen=True)
class ResolvedField:
    """One spec field mapped onto a dataset's columns (the result of :meth:`BatchSpec.validate`).

    Attributes
    ----------
    name, role, field
        The output name, ``"input"``/``"target"`` and the declared field.
    group
        The ragged group holding a ``Ragged`` field's variables (``None`` for scalars); for
        a field whose variables lie in several groups, the group of its first variable,
        whose counts are the field's lengths.
    columns
        Column indices of the variables inside ``group`` (``None`` for scalars).
    sort_column
        Column index of ``field.sort_by`` inside ``group``, or ``None``.
    at
        The output column of each of ``columns`` when the field spans several groups
        (``None``: ``columns`` are all of them, in order).
    more
        The field's variables in other groups, each padded by its own counts.
    """

    name: str
    role: str
    field: Field
    group: str | None = None
    columns: np.ndarray | None = None
    sort_column: int | None = None
    at: np.ndarray | None = None
    more: tuple[GroupColumns, ...] = ()

    @property
    def groups(self) -> list[str]:
        """Every group holding the field's variables, its own (``group``) first; none for scalars."""
        return ([] if self.group is None else [self.group]) + [m.group for m in self.more]

    @property
    def ragged(self) -> Ragged:
        """The declared field of a padded output (one with a ``group``): always a ``Ragged``."""
        if not isinstance(self.field, Ragged):
            raise TypeError(f"output {self.name!r} is a Scalars field, not a padded one")
        return self.field


def resolve_fields(fields: Iterable[tuple[str, str, Field]], dataset: Dataset) -> list[ResolvedField]:
    """Check every variable of ``fields`` against ``dataset`` and map names to columns.

    Parameters
    ----------
    fields
        ``(role, name, field)`` triples, as :meth:`BatchSpec.fields
        <lstm_data.batching.spec.batch_spec.BatchSpec.fields>` gives them.
    dataset
        The data the batches will be made of.

    Returns
    -------
    list of ResolvedField
        One per field, in the order of ``fields``.

    Raises
    ------
    SchemaError
        An unknown variable (with close-match suggestions), a scalar asked of a
        ragged field or the reverse, or a ragged field spanning groups that needs
        one count per row (``layout="packed"``, ``sort_by``).
    """
    scalars = set(dataset.scalar_names)
    groups = dataset.groups
    prong_vars = {v: g for g, names in groups.items() for v in names}
    resolved: list[ResolvedField] = []
    wrong = _WrongNames(dataset)  # every variable that is not there, reported at once
    for role, name, fld in fields:
        where = f"{role} {name!r}"
        if isinstance(fld, Scalars):
            for v in fld.vars:
                if v in scalars:
                    continue
                if v in prong_vars:
                    wrong.add(SchemaError(f"{where}: {v!r} is a prong variable of group "
                                          f"{prong_vars[v]!r}; use Ragged for it", variable=v))
                    continue
                wrong.unknown(where, "scalar", v, sorted(scalars), sorted(prong_vars))
            resolved.append(ResolvedField(name, role, fld))
            continue
        owners: list[str] = []
        named = [(v, where) for v in fld.vars]
        if fld.sort_by is not None:  # said as such: the name came from sort_by, not from vars
            named.append((fld.sort_by, f"{where}: sort_by"))
        for v, at in named:
            if v not in prong_vars:
                if v in scalars and len(dataset) == 0:
                    wrong.add(SchemaError(f"{at}: {v!r} was read as a scalar column because "
                                          "the data has no rows to show its arrays; declare "
                                          "its group with a Schema", variable=v))
                elif v in scalars:
                    dotted = _dotted(v, groups)
                    wrong.add(SchemaError(f"{at}: {v!r} is a scalar column; use Scalars for it"
                                          f"{', or read its group as one (below)' if dotted else ''}", variable=v),
                              dotted)
                else:
                    wrong.unknown(at, "prong variable", v, sorted(prong_vars), sorted(scalars))
                continue
            owners.append(prong_vars[v])
        if len(owners) < len(named):
            continue
        var_owners = owners[:len(fld.vars)]
        sort_owner = owners[len(fld.vars)] if fld.sort_by is not None else None
        if len(set(var_owners)) > 1:
            _one_count_needed(where, name, fld, var_owners, dataset)
            resolved.append(_spanning(name, role, fld, var_owners, groups))
            continue
        if sort_owner not in (None, var_owners[0]):
            raise SchemaError(f"{where}: sort_by {fld.sort_by!r} is in group {sort_owner!r}, not in "
                              f"the field's group {var_owners[0]!r}", variable=fld.sort_by)
        group = owners[0]
        index = {v: i for i, v in enumerate(groups[group])}
        cols = np.array([index[v] for v in fld.vars], dtype=np.intp)
        sort_col = index[fld.sort_by] if fld.sort_by is not None else None
        resolved.append(ResolvedField(name, role, fld, group, cols, sort_col))
    wrong.raise_any()
    return resolved


class _WrongNames:
    """The spec's variables that the data does not hold as asked, gathered to be reported at once."""

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset
        self.errors: list[SchemaError] = []
        self.hints: dict[str, None] = {}  # where a schema beside the data names them, each once

    def add(self, error: SchemaError, hint: str = "") -> None:
        """A variable the data holds, but not as asked; ``hint``: how to read it as asked (said once)."""
        self.errors.append(error)
        if hint:
            self.hints[hint] = None

    def unknown(self, where: str, kind: str, name: str, known: list[str], others: list[str]) -> None:
        """An unknown name, with its close matches."""
        from lstm_data.data.dataset import unknown_name_error

        self.errors.append(_in(where, unknown_name_error(kind, name, known, others)))
        hint = _schema_hint(self.dataset, name)
        if hint:
            self.hints[hint] = None

    def raise_any(self) -> None:
        """Raise one SchemaError naming every wrong variable (the first one's as its ``variable``)."""
        if not self.errors:
            return
        hints = "".join(f". {h}" for h in self.hints)
        if len(self.errors) == 1:
            raise SchemaError(f"{self.errors[0].message}{hints}", variable=self.errors[0].variable)
        listed = "; ".join(e.message for e in self.errors)
        raise SchemaError(f"{len(self.errors)} variables of the spec are not in the data as asked: {listed}{hints}",
                          variable=self.errors[0].variable)


def _one_count_needed(where: str, name: str, fld: Ragged, owners: list[str], dataset: Dataset) -> None:
    """Refuse a field over several groups whose form needs one prong count per row."""
    if fld.form.one_count is not None:
        need = fld.form.one_count
    elif fld.sort_by is not None:
        need = f"sort_by {fld.sort_by!r} (it orders the prongs of one group)"
    else:
        return
    split = {g: [v for v, o in zip(fld.vars, owners) if o == g] for g in dict.fromkeys(owners)}
    shown = "; ".join(f"group {g!r}: {_short(vs)}" for g, vs in split.items())
    raise SchemaError(f"{where}: with {need}, all variables of one Ragged field must be in one group "
                      f"(one prong count per row), got {shown} "
                      f"({count_mismatch(dataset.offsets, list(split))})", variable=name)


def _spanning(name: str, role: str, fld: Ragged, owners: list[str],
              groups: dict[str, list[str]]) -> ResolvedField:
    """A field whose variables lie in several groups: each group's variables padded by its own counts."""
    parts = []
    for g in dict.fromkeys(owners):
        index = {v: i for i, v in enumerate(groups[g])}
        at = np.array([k for k, o in enumerate(owners) if o == g], dtype=np.intp)
        cols = np.array([index[fld.vars[k]] for k in at], dtype=np.intp)
        parts.append(GroupColumns(g, cols, at))
    first = parts[0]
    return ResolvedField(name, role, fld, first.group, first.columns, None, first.at, tuple(parts[1:]))


def _dotted(name: str, groups: Mapping[str, list[str]]) -> str:
    """Why a dotted name asked as a prong variable was read as a scalar, and how to read it as one
    (``""`` for a name without a dot)."""
    if "." not in name:
        return ""
    prefix = name.split(".", 1)[0]
    beside = f" (group {prefix!r} was read from its other columns)" if prefix in groups else ""
    return (f"Columns named {prefix}.* belong to group {prefix!r} by their name, but those that hold one number per "
            f"row are read as scalars{beside}; to read them as prong variables, declare the group: open the data "
            f"with schema={{'groups': {{{prefix!r}: '{prefix}.*'}}}}, or a schema file with [groups] "
            f"{prefix} = \"{prefix}.*\" (--schema FILE.toml on the command line)")


def _schema_hint(dataset: Dataset, name: str) -> str:
    """Where a schema file beside the data names ``name`` (the data was opened without it)."""
    from lstm_data.io.schema_beside import schema_hint

    return schema_hint(getattr(dataset, "source", ()), name)


def _in(where: str, err: SchemaError) -> SchemaError:
    """Prefix an error's message with the field it was found in."""
    return SchemaError(f"{where}: {err.message}", variable=err.variable)


def _short(names: list[str], keep: int = 4) -> str:
    """``names`` for a message: the first few and how many more."""
    shown = ", ".join(repr(n) for n in names[:keep])
    return shown + (f" and {len(names) - keep} more" if len(names) > keep else "")
