"""``BatchSpec``: the declared format of a batch.

A spec names every output of a batch, its variables, dtype and shape before any
data is read, like a blueprint: a Keras model's ``Input``s or a torch collate can
be built from :meth:`BatchSpec.signature`. :meth:`BatchSpec.validate` checks it
against a dataset and maps variable names to column indices.

Example
-------
>>> spec = BatchSpec(
...     inputs={"input_slice": Scalars(["calE", "nHit"]),
...             "input_png3d": Ragged(["png.calE", "png.len"], max_len=8, lengths=True)},
...     targets={"target_total": Scalars(["trueE"])})
>>> spec.signature()["input_png3d"].shape
(None, 8, 2)
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence, TypeVar

import numpy as np

from lstm_data._util.types import PlainDict, PlainMapping
from lstm_data._util.declared import unknown_option
from lstm_data.batching.spec.augment import Noise, augment_to_dict, check_augment
from lstm_data.batching.spec.derived import Derivation, check_derived, derive, expand_names
from lstm_data.batching.spec.fields import CU_SEQLENS_SUFFIX, MASK_SUFFIX, MAX_SEQLEN_SUFFIX, Field, Ragged, Scalars
from lstm_data.batching.spec.fill_values import check_fill_values
from lstm_data.batching.spec.checks import check_integer_noise, check_multiple, check_nan_to, check_one_step_pads
from lstm_data.batching.spec.fitting import fit_standardize
from lstm_data.batching.spec.plain import spec_from_dict, spec_from_lstm_ee, spec_from_toml, spec_to_dict, spec_to_toml
from lstm_data.batching.spec.weaver import spec_from_weaver
from lstm_data.batching.spec.outputs import (
    LENGTHS_SUFFIX,
    WEIGHTS_SUFFIX,
    OutputSignature,
    ResolvedField,
    resolve_fields,
)
from lstm_data.errors import SchemaError

if TYPE_CHECKING:
    from os import PathLike

    from lstm_data.data.dataset import Dataset

__all__ = ["BatchSpec", "Scalars", "Ragged", "OutputSignature", "ResolvedField", "LENGTHS_SUFFIX",
           "WEIGHTS_SUFFIX"]

#: One part of a batch: output name -> array.
Arrays = dict[str, np.ndarray]
#: A batch: ``(inputs, targets, weights)``.
Batch = tuple[Arrays, Arrays, Arrays]


#: the values of a batch's dicts, kept as given by flatten and unflatten (arrays, tensors, ...)
V = TypeVar("V")


class BatchSpec:
    """The outputs of a batch: named input and target fields.

    Parameters
    ----------
    inputs, targets
        Output name -> :class:`Scalars` or :class:`Ragged`. Names must be unique
        across both, including the ``<name>_lengths`` outputs of ragged fields.
    nan_to
        Replace NaN in the inputs (values and NaN padding) by this finite number,
        as lstm_ee's NaN mask did for Keras ``Masking``; ``None`` keeps NaN.
        Targets and integer inputs are never changed.
    pad_to_multiple_of
        Round every per-batch prong width (a ``Ragged`` field with ``max_len=None``
        or ``fixed=False``) up to a multiple of this, capped at ``max_len``: it
        bounds the number of distinct shapes (compiled graphs retrace per shape).
    augment
        Noise added to input variables each time a batch is built, the same for a
        given ``(seed, epoch, row, element)`` in any process or shard:
        ``{variable: {"gaussian": sigma}}`` (``x + sigma * z``) or
        ``{variable: {"relative": sigma}}`` (``x * (1 + sigma * z)``). See
        :mod:`lstm_data.batching.spec.augment`.
    derived
        Variables computed from the data's columns: name -> expression, e.g.
        ``{"part_pt": "np.hypot(part_px, part_py)"}``. Any field may use them; one
        that reads a prong variable joins its group. Expressions are checked
        against an allow-list, never ``eval``-ed (see :mod:`lstm_data.batching.spec.expressions`).
    selection
        A per-row boolean expression (e.g. ``"(jet_pt > 500) & (num(part_px) > 0)"``):
        batches, orders, splits, shards and stores use only the rows it holds for.

    Raises
    ------
    SchemaError
        A field is not a ``Scalars``/``Ragged``, two outputs share a name, or an
        augmented variable is in no input.
    OptionError
        ``nan_to`` is not a finite number, ``pad_to_multiple_of`` not an int >= 1,
        ``augment`` is malformed, or a fill value (``nan_to``, a ``pad_value``)
        overflows to infinity in its field's dtype
        (:mod:`lstm_data.batching.spec.fill_values`).

    Warns
    -----
    PrecisionWarning
        A fill value its field's dtype holds only rounded.
    """

    def __init__(self, inputs: Mapping[str, Field] | None = None,
                 targets: Mapping[str, Field] | None = None, *, nan_to: float | None = None,
                 pad_to_multiple_of: int | None = None,
                 augment: Mapping[str, Mapping[str, float] | Noise] | None = None,
                 derived: Mapping[str, str] | None = None, selection: str | None = None) -> None:
        self.inputs: dict[str, Field] = dict(inputs or {})
        self.targets: dict[str, Field] = dict(targets or {})
        self.nan_to = check_nan_to(nan_to)
        self.pad_to_multiple_of = check_multiple(pad_to_multiple_of)
        self._derived, self._selection = check_derived(derived, selection)
        self.derived: dict[str, str] = dict(derived or {})
        self.selection: str | None = selection
        seen: set[str] = set()
        for role, fields in (("input", self.inputs), ("target", self.targets)):
            for name, fld in fields.items():
                if not isinstance(fld, (Scalars, Ragged)):
                    raise SchemaError(f"{role} {name!r} must be Scalars or Ragged, "
                                      f"got {type(fld).__name__}", variable=name)
                for out in self._names_of(name, fld):
                    if out in seen:
                        raise SchemaError(f"output name {out!r} is used twice", variable=out)
                    seen.add(out)
        if not seen:
            raise SchemaError("a BatchSpec needs at least one input or target")
        check_one_step_pads(self.inputs, self.nan_to)
        check_fill_values(self.inputs, self.targets, self.nan_to)
        self.augment: dict[str, Noise] | None = check_augment(
            augment, [v for fld in self.inputs.values() for v in fld.vars])
        check_integer_noise(self.inputs, self.augment)

    # -- description -----------------------------------------------------------
    @staticmethod
    def _names_of(name: str, fld: Field) -> list[str]:
        return fld.output_names(name)

    def fields(self) -> Iterable[tuple[str, str, Field]]:
        """``(role, name, field)`` for every field, inputs first, in declared order."""
        for name, fld in self.inputs.items():
            yield "input", name, fld
        for name, fld in self.targets.items():
            yield "target", name, fld

    @property
    def variables(self) -> list[str]:
        """Every variable the spec reads, inputs then targets, each once.

        These are the columns a reader needs to make these batches (``sort_by``
        columns included); ``lstm-data precompute`` reads only these where the
        format can skip columns (:class:`~lstm_data.io.read_options.ReadOptions`
        ``needed``).
        """
        names = [v for _, _, fld in self.fields() for v in list(fld.vars) + (
            [fld.sort_by] if isinstance(fld, Ragged) and fld.sort_by is not None else [])]
        return expand_names(list(dict.fromkeys(names)), self._derived, self._selection)

    def signature(self) -> dict[str, OutputSignature]:
        """Every output's name, role, dtype and shape, in flat order, before any data.

        Shapes start with the batch dimension ``None``. A ``Scalars`` field is
        ``(B, S)``, ``(B,)`` with ``squeeze``, in its dtype. A ``Ragged`` field's prong
        dimension is ``max_len`` when it is fixed, else ``None`` (per batch); it is
        ``(B, P, V)``, ``(B, V, P)`` with ``layout="channels_first"``, and ``(T, V)``
        with ``layout="packed"`` (``T`` the batch's elements, ``None``).

        Returns
        -------
        dict of str to OutputSignature
            Output name -> its signature; ``<name>_lengths`` (int64 ``(B,)``),
            ``<name>_mask`` (bool ``(B, P)``), and for packed fields
            ``<name>_cu_seqlens`` (int32 ``(B + 1,)``, shown ``(None,)``) and
            ``<name>_max_seqlen`` (int32 ``()``) included.
        """
        out: dict[str, OutputSignature] = {}
        for role, name, fld in self.fields():
            if isinstance(fld, Scalars):
                out[name] = OutputSignature(name, role, fld.np_dtype,
                                            (None,) if fld.squeeze else (None, len(fld.vars)))
                continue
            for suffix, (dtype, dims) in fld.form.signature(fld).items():
                out[name + suffix] = OutputSignature(name + suffix, role, np.dtype(dtype), dims)
        return out

    @property
    def input_names(self) -> list[str]:
        """Names of the input outputs (including ``*_lengths``), in order."""
        return [n for n, s in self.signature().items() if s.role == "input"]

    @property
    def target_names(self) -> list[str]:
        """Names of the target outputs, in order."""
        return [n for n, s in self.signature().items() if s.role == "target"]

    def flat_names(self, weights: bool = False) -> list[str]:
        """Output names in flat order: inputs, targets, then the weights if asked.

        Parameters
        ----------
        weights
            Also name each target's weights, ``<target>_weights``.

        Returns
        -------
        list of str
            The names, in the order of :meth:`flatten`.
        """
        names = self.input_names + self.target_names
        if weights:
            names += [t + WEIGHTS_SUFFIX for t in self.target_names]
        return names

    # -- flattening at framework borders ---------------------------------------------
    def flatten(self, batch: Sequence[Mapping[str, V]], *,
                as_dict: bool = False) -> tuple[V, ...] | dict[str, V]:
        """A batch's dicts as one flat tuple (or dict) in :meth:`flat_names` order.

        Parameters
        ----------
        batch
            ``(inputs, targets)`` or ``(inputs, targets, weights)`` dicts.
        as_dict
            Return a dict of flat name -> array instead of a tuple.

        Returns
        -------
        tuple or dict
            The arrays in flat order (weights last, when the batch has them).

        Raises
        ------
        SchemaError
            An output is missing from the batch.
        """
        with_weights = len(batch) == 3
        parts = {"input": batch[0], "target": batch[1]}
        flat: dict[str, V] = {}
        for name, sig in self.signature().items():
            if name not in parts[sig.role]:
                raise SchemaError(f"batch has no {sig.role} {name!r}", variable=name)
            flat[name] = parts[sig.role][name]
        if with_weights:
            for t in self.target_names:
                if t not in batch[2]:
                    raise SchemaError(f"batch has no weights for target {t!r}", variable=t)
                flat[t + WEIGHTS_SUFFIX] = batch[2][t]
        return flat if as_dict else tuple(flat.values())

    def unflatten(self, flat: Sequence[V] | Mapping[str, V]) -> tuple[dict[str, V], ...]:
        """A flat tuple or dict (from :meth:`flatten`) back as a batch's dicts.

        Parameters
        ----------
        flat
            Items in :meth:`flat_names` order (with or without weights), or a dict
            of flat name -> array.

        Returns
        -------
        tuple of dict
            ``(inputs, targets)``, or ``(inputs, targets, weights)`` when every
            weight is present.

        Raises
        ------
        SchemaError
            Wrong number of items, or a missing name.
        """
        plain = self.flat_names()
        full = self.flat_names(weights=True)
        if not isinstance(flat, Mapping):
            items = list(flat)
            if len(items) not in (len(plain), len(full)):
                raise SchemaError(f"expected {len(plain)} or {len(full)} flat items, got {len(items)}")
            flat = dict(zip(full if len(items) == len(full) else plain, items))
        missing = [n for n in plain if n not in flat]
        if missing:
            raise SchemaError(f"flat batch is missing {missing}", variable=missing[0])
        sig = self.signature()
        inputs = {n: flat[n] for n in plain if sig[n].role == "input"}
        targets = {n: flat[n] for n in plain if sig[n].role == "target"}
        wnames = [t + WEIGHTS_SUFFIX for t in self.target_names]
        if wnames and all(w in flat for w in wnames):
            return inputs, targets, {t: flat[t + WEIGHTS_SUFFIX] for t in self.target_names}
        return inputs, targets

    # -- validation ---------------------------------------------------------------------
    def validate(self, dataset: Dataset) -> list[ResolvedField]:
        """Check every variable against ``dataset`` and map names to columns.

        Parameters
        ----------
        dataset
            The data the batches will be made of.

        Returns
        -------
        list of ResolvedField
            One per field, in :meth:`fields` order.

        Raises
        ------
        SchemaError
            An unknown variable (with close-match suggestions), a scalar asked of a
            ragged field or the reverse, or one ragged field spanning two groups.
        """
        return resolve_fields(self.fields(), dataset)

    # -- copies ------------------------------------------------------------------------------
    def replace(self, **changes: object) -> "BatchSpec":
        """A copy with some options changed.

        Parameters
        ----------
        **changes
            New values of ``inputs``, ``targets``, ``nan_to``, ``pad_to_multiple_of``
            or ``augment``.

        Returns
        -------
        BatchSpec
            The new spec, checked as a new one is.
        """
        current: dict[str, Any] = {"inputs": self.inputs, "targets": self.targets, "nan_to": self.nan_to,
                                   "pad_to_multiple_of": self.pad_to_multiple_of, "augment": self.augment}
        current.update(derived=self.derived or None, selection=self.selection)
        for name in changes:
            if name not in current:
                raise unknown_option(name, current, "BatchSpec")
        current.update(changes)
        return BatchSpec(**current)

    def derive(self, dataset: Dataset) -> Dataset:
        """``dataset`` with this spec's derived variables and only its selected rows.

        :class:`~lstm_data.batching.epochs.batches.Batches` (and so ``precompute``, the shards
        and the adapters) calls it on the data it is given; call it yourself to look at
        the rows and columns the fields read.

        Parameters
        ----------
        dataset
            The stored data.

        Returns
        -------
        Dataset
            ``dataset`` itself when the spec has no ``derived`` and no ``selection``;
            in RAM, a dataset holding the selected rows and the derived columns
            (computed once); on disk, a view that computes them per read.

        Raises
        ------
        SchemaError
            An expression reads an unknown variable (close names suggested) or mixes
            two groups, a derived name is taken by a column, or the selection is not
            one value per row.
        """
        return derive(dataset, self._derived, self._selection).dataset

    def derivation(self, dataset: Dataset, bounds: np.ndarray | None = None) -> Derivation:
        """:meth:`derive`, with what a view of the derived data needs: its files' row bounds.

        Parameters
        ----------
        dataset
            The stored data.
        bounds
            The row bounds of ``dataset``'s files as its view knows them (default: the
            dataset's own).

        Returns
        -------
        Derivation
            The derived data (``dataset`` itself when there is nothing to apply), what was
            applied and the row bounds of its files.
        """
        return derive(dataset, self._derived, self._selection, bounds)

    def fit(self, dataset: Dataset, *, fraction: float = 0.1, seed: int = 0) -> "BatchSpec":
        """This spec with every ``"auto"`` standardisation center and scale computed from ``dataset``.

        weaver-core's rule, over a seeded sample of ``fraction`` of the rows (see
        :mod:`lstm_data.batching.spec.fitting`; :func:`lstm_data.batching.spec.fit_file.fit_spec_file` writes the
        numbers back into a spec file).

        Parameters
        ----------
        dataset
            The training data (the spec's derived variables and selection apply).
        fraction
            The share of rows sampled, in (0, 1].
        seed
            Seed of the row sample.

        Returns
        -------
        BatchSpec
            The spec with numbers in place of ``"auto"``.
        """
        return fit_standardize(self, dataset, fraction=fraction, seed=seed)

    # -- file forms (lstm_data.batching.spec.plain and .weaver) ---------------------------------
    def to_dict(self) -> PlainDict:
        """The spec as plain data that :meth:`from_dict` reads back.

        Returns
        -------
        dict
            JSON-safe (NaN and infinities as strings): the format ``version``,
            ``inputs`` and ``targets`` tables, and ``nan_to`` /
            ``pad_to_multiple_of`` / ``augment`` when set.
        """
        return spec_to_dict(self)

    def to_toml(self) -> str:
        """The spec as TOML text (``version = 2``, ``[inputs.NAME]`` and ``[targets.NAME]`` tables).

        Returns
        -------
        str
            What :meth:`from_toml` reads back (bitwise the same batches).
        """
        return spec_to_toml(self)

    @classmethod
    def from_dict(cls, data: PlainMapping, *, source: str = "spec") -> "BatchSpec":
        """Build a spec from ``{"inputs": {name: field}, "targets": {...}}`` (TOML/JSON form).

        See :func:`~lstm_data.batching.spec.plain.spec_from_dict` (format versions included).

        Parameters
        ----------
        data
            The tables; ``order`` and ``read`` tables are ignored.
        source
            Where the data came from, named in errors.

        Returns
        -------
        BatchSpec
            The spec.
        """
        return spec_from_dict(cls, data, source=source)

    @classmethod
    def from_toml(cls, path: "str | PathLike[str]") -> "BatchSpec":
        """Load a spec from a TOML file with ``[inputs.NAME]`` / ``[targets.NAME]`` tables.

        See :func:`~lstm_data.batching.spec.plain.spec_from_toml` for an example file.

        Parameters
        ----------
        path
            The TOML file; its ``[order]`` and ``[read]`` tables are left to
            ``Order.from_toml`` and ``ReadOptions.from_toml``.

        Returns
        -------
        BatchSpec
            The spec.
        """
        return spec_from_toml(cls, path)

    @classmethod
    def from_lstm_ee(cls, config: object) -> "BatchSpec":
        """The spec that reproduces lstm_ee's ``DataGenerator`` batches.

        Reads ``vars_input_slice``, ``vars_input_png3d``, ``vars_input_png2d``,
        ``var_target_total``, ``var_target_primary`` and ``max_prongs`` from a dict
        (or an object with those attributes); missing or ``None`` keys give no output.
        lstm_ee's layout: ``input_slice`` (B, S) float32, ``input_png3d`` /
        ``input_png2d`` (B, P, V) float32 padded with NaN (whatever ``Ragged``'s
        default), where P is the batch's longest row capped at ``max_prongs`` (per
        batch, not fixed), and ``target_total`` / ``target_primary`` (B, 1) float32.

        The other keys of lstm_ee's ``Config`` (``batch_size``, ``model``, ...)
        are accepted and ignored; ``noise`` and ``prong_sorters``, which change
        lstm_ee's batches, are not applied and give a warning.

        Parameters
        ----------
        config
            lstm_ee's configuration, a dict or an object with those attributes.

        Returns
        -------
        BatchSpec
            The spec of lstm_ee's batches.

        Raises
        ------
        SchemaError
            A key that is not one of lstm_ee's ``Config`` (a typo such as
            ``max_prong``): the error lists the known keys and suggests the closest.
        """
        return spec_from_lstm_ee(cls, config)

    @classmethod
    def from_weaver(cls, path: "str | PathLike[str]", *, observers: bool = True) -> "BatchSpec":
        """The spec whose batches hold weaver-core's tensors for a weaver YAML data config.

        See :func:`~lstm_data.batching.spec.weaver.spec_from_weaver` and the "Coming from
        weaver-core" page of the documentation for the whole mapping. Needs PyYAML (the
        ``weaver`` extra).

        Parameters
        ----------
        path
            The weaver-core YAML data config.
        observers
            Also output each observer as a float32 ``(B,)`` target named after it.

        Returns
        -------
        BatchSpec
            The spec; ``"auto"`` standardisation parameters are filled in by :meth:`fit`.
        """
        return spec_from_weaver(path, cls, observers=observers)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BatchSpec) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={f!r}" for _, n, f in self.fields())
        extra = "".join(f", {k}={v!r}" for k, v in (("nan_to", self.nan_to),
                                                   ("pad_to_multiple_of", self.pad_to_multiple_of),
                                                   ("augment", augment_to_dict(self.augment)))
                        if v is not None)
        return f"BatchSpec({inner}{extra})"
