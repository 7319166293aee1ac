"""The field types of a :class:`~lstm_data.batching.spec.batch_spec.BatchSpec`: ``Scalars`` and ``Ragged``."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Mapping, Sequence, Union

import numpy as np
from numpy.typing import DTypeLike

from lstm_data._util.types import PlainDict, PlainMapping
from lstm_data.batching.spec.sizes import MAX_SLOTS
from lstm_data.batching.spec.forms import (
    CU_SEQLENS_SUFFIX,
    MASK_SUFFIX,
    MAX_SEQLEN_SUFFIX,
    PAD_MODES,
    Form,
    form_of,
)
from lstm_data.batching.spec.standardize import (
    Standardize,
    check_standardize,
    number_option,
    standardize_to_dict,
)
from lstm_data.batching.spec.empty import check_empty
from lstm_data.errors import SchemaError
from lstm_data._util.declared import SuggestsKeywords

__all__ = ["Scalars", "Ragged", "Field", "Standardize", "field_from_dict", "MASK_SUFFIX",
           "CU_SEQLENS_SUFFIX", "MAX_SEQLEN_SUFFIX", "SCALAR_DTYPES"]

_DTYPES = {"float32": np.float32, "float64": np.float64}
#: the dtypes of a ``Scalars`` output: the float ones and the integer ones of labels and ids
SCALAR_DTYPES = ("float32", "float64", "int64", "int32")


def _dtype_name(dtype: Any, where: str, allowed: Sequence[str] = tuple(_DTYPES)) -> str:
    choices = ", ".join(allowed[:-1]) + " or " + allowed[-1]
    if not isinstance(dtype, (str, np.dtype, type)):
        raise SchemaError(f"{where}: dtype must be {choices}, got {type(dtype).__name__} {dtype!r:.80}")
    try:
        dt: np.dtype[Any] = np.dtype(dtype)
    except (TypeError, ValueError, KeyError, SyntaxError, OverflowError):  # numpy's refusals of a text
        raise SchemaError(f"{where}: dtype must be {choices}, got {dtype!r:.80}") from None
    if dt.name not in allowed:
        raise SchemaError(f"{where}: dtype must be {choices}, got {dt.name}")
    return dt.name


def _var_list(vars: Any, where: str) -> tuple[str, ...]:
    if isinstance(vars, str) or not isinstance(vars, Sequence):
        raise SchemaError(f"{where}: vars must be a list of variable names, got {vars!r}")
    out = tuple(vars)
    if not out:
        raise SchemaError(f"{where}: vars is empty")
    bad = [v for v in out if not isinstance(v, str)]
    if bad:
        raise SchemaError(f"{where}: variable names must be strings, got {bad[0]!r}")
    seen: set[str] = set()
    dup = sorted({v for v in out if v in seen or seen.add(v)})  # type: ignore[func-returns-value]
    if dup:
        raise SchemaError(f"{where}: variables listed twice: {dup}", variable=dup[0])
    return out


def _json_float(x: float) -> float | str:
    return str(x) if math.isnan(x) or math.isinf(x) else x


class _Field(metaclass=SuggestsKeywords):
    """What both field types have: an output dtype and the names of their outputs."""

    dtype: str

    @property
    def np_dtype(self) -> np.dtype:
        """The output dtype as a ``numpy.dtype``."""
        return np.dtype(self.dtype)

    def output_names(self, name: str) -> list[str]:
        """The outputs of this field under output name ``name``, in signature order.

        Parameters
        ----------
        name
            The field's output name in the spec.

        Returns
        -------
        list of str
            ``[name]`` for ``Scalars``. For ``Ragged``: ``name``, then ``<name>_lengths``,
            ``<name>_mask``, ``<name>_cu_seqlens`` and ``<name>_max_seqlen`` where the
            options ask for them.
        """
        return [name, *(name + suffix for suffix in self._suffixes())]

    def _suffixes(self) -> list[str]:
        return []


@dataclass(frozen=True, init=False)
class Scalars(_Field):
    """Scalar columns side by side: output shape ``(B, S)``, or ``(B,)`` with ``squeeze``.

    Parameters
    ----------
    vars
        Scalar column names, in output column order.
    dtype
        ``float32`` (default), ``float64``, ``int64`` or ``int32``. An integer output
        (class labels, event ids) takes its values unchanged or not at all: a float
        value that is not a whole number, a NaN, or a value outside the dtype's range
        is a :class:`~lstm_data.errors.SchemaError` naming the output, the variable and
        the first such row. The spec's ``nan_to`` does not apply to it.
    standardize
        Variable name -> :class:`Standardize`: each named column becomes
        ``clip((x - center) * scale, clip_min, clip_max)`` in the output dtype. Float
        outputs only.
    squeeze
        Output ``(B,)`` instead of ``(B, 1)``; the field must have one variable. The
        shape of a class-index label that ``torch.nn.CrossEntropyLoss`` and Keras'
        sparse categorical losses take.

    Raises
    ------
    SchemaError
        A dtype out of the choices, ``standardize`` on an integer output or naming a
        variable not in ``vars``, or ``squeeze`` with more than one variable.
    """

    vars: tuple[str, ...]
    dtype: str = "float32"
    standardize: Mapping[str, Standardize] = field(default_factory=dict)
    squeeze: bool = False

    def __init__(self, vars: Sequence[str], dtype: DTypeLike = np.float32,
                 standardize: Mapping[str, Standardize | PlainMapping] | None = None,
                 squeeze: bool = False) -> None:
        where = "Scalars"
        names = _var_list(vars, where)
        dtype_name = _dtype_name(dtype, where, SCALAR_DTYPES)
        std = check_standardize(standardize, names, where)
        if std and np.dtype(dtype_name).kind != "f":
            var = next(iter(std))
            raise SchemaError(f"{where}: standardize ({var!r}) applies to float outputs only, and this "
                              f"output is {dtype_name}: an integer output holds the values as they are",
                              variable=var)
        if not isinstance(squeeze, (bool, np.bool_)):
            raise SchemaError(f"{where}: squeeze must be True or False, got {squeeze!r}")
        if squeeze and len(names) != 1:
            raise SchemaError(f"{where}: squeeze=True gives a (B,) output of one variable, but vars has "
                              f"{len(names)}: {list(names)}")
        object.__setattr__(self, "vars", names)
        object.__setattr__(self, "dtype", dtype_name)
        object.__setattr__(self, "standardize", std)
        object.__setattr__(self, "squeeze", bool(squeeze))

    @property
    def integer(self) -> bool:
        """Whether the output is of an integer dtype (values kept exactly, never standardised)."""
        return self.np_dtype.kind in "iu"

    def to_dict(self) -> PlainDict:
        """The field as a table of a spec file.

        Returns
        -------
        dict
            ``type = "scalars"``, ``vars``, ``dtype``, and ``standardize`` and
            ``squeeze`` when set.
        """
        out: dict[str, Any] = {"type": "scalars", "vars": list(self.vars), "dtype": self.dtype}
        if self.standardize:
            out["standardize"] = standardize_to_dict(self.standardize)
        if self.squeeze:  # written only when set: older spec files stay as they were
            out["squeeze"] = True
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Scalars) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(repr(self.to_dict()))

    def __repr__(self) -> str:
        std = f", standardize={self.standardize!r}" if self.standardize else ""
        squeeze = ", squeeze=True" if self.squeeze else ""
        return f"Scalars({list(self.vars)!r}, dtype={self.dtype}{std}{squeeze})"


@dataclass(frozen=True, init=False)
class Ragged(_Field):
    """Prong variables of one ragged group, padded: output shape ``(B, P, V)``.

    Parameters
    ----------
    vars
        Prong variable names (all in one group), in output order.
    max_len
        Prong slots ``P``. ``None``: the batch's longest row.
    pad_value
        Fill of the empty slots: 0.0 by default (as Keras, torch and weaver); a spec
        file without a format version, and ``BatchSpec.from_lstm_ee``, keep lstm_ee's
        NaN. Keras ``Masking`` cannot match NaN: use a finite value (or the spec's
        ``nan_to``) and/or ``lengths``.
    sort_by
        A variable of the same group that orders each row's prongs before
        truncation (NaN last).
    descending
        Sort order for ``sort_by``.
    padding, truncating
        ``"post"`` or ``"pre"``, as in Keras ``pad_sequences``.
    lengths
        Also output ``<name>_lengths`` (B,) int64: the prongs kept per row.
    dtype
        ``float32`` (default) or ``float64``.
    fixed
        With ``max_len`` given: ``True`` (default) makes ``P == max_len`` always;
        ``False`` makes ``P`` the batch's longest row capped at ``max_len``
        (lstm_ee's ``max_prongs`` behaviour).
    pad_mode
        ``"constant"`` (default): empty slots hold the pad value. ``"wrap"``: a
        row's own (kept, sorted, truncated) elements repeat to fill the width, slot
        ``k`` holding element ``k % n`` (weaver-core's ``wrap``); rows without
        elements hold the pad value. Takes ``padding="post"`` and a padded layout.
    layout
        ``"padded"`` (default) ``(B, P, V)``; ``"channels_first"`` ``(B, V, P)``
        (weaver-core's); ``"packed"``: the kept elements of all rows one after
        another, ``(T, V)``, with outputs ``<name>_cu_seqlens`` ``(B + 1,)`` int32
        (the prefix sum of the lengths, from 0) and ``<name>_max_seqlen`` (0-d
        int32), what variable-length attention takes. Packed ignores ``padding``
        and the pad values; lengths are cut at ``max_len``.
    standardize
        Variable name -> :class:`Standardize`: each real element becomes
        ``clip((x - center) * scale, clip_min, clip_max)`` in the output dtype, in
        the gather pass itself; a ``Standardize.pad_value`` fills that variable's
        padded slots instead of ``pad_value``.
    mask
        Also output ``<name>_mask`` (B, P) bool, True at the slots that hold a
        row's own elements (not at wrapped repeats). Not with ``"packed"``.
    empty
        What a row without elements becomes: ``"keep"`` (default; length 0, all
        padding), ``"one_step"`` (one padded step counted as an element: length 1,
        mask True there, one pad-valued element in a packed output; for cuDNN LSTMs
        and attention, which fail on fully masked rows) or ``"drop"`` (left out of
        the batches' rows). See :mod:`lstm_data.batching.spec.empty`.

    Raises
    ------
    SchemaError
        An option out of its choices, ``"wrap"`` with ``padding="pre"`` or with
        ``"packed"``, ``mask`` with ``"packed"``, or ``standardize`` naming a
        variable that is not in ``vars``.
    """

    vars: tuple[str, ...]
    max_len: int | None = None
    pad_value: float = 0.0
    sort_by: str | None = None
    descending: bool = True
    padding: str = "post"
    truncating: str = "post"
    lengths: bool = False
    dtype: str = "float32"
    fixed: bool = True
    pad_mode: str = "constant"
    layout: str = "padded"
    standardize: Mapping[str, Standardize] = field(default_factory=dict)
    mask: bool = False
    empty: str = "keep"

    def __init__(self, vars: Sequence[str], max_len: int | None = None, pad_value: float = 0.0,
                 sort_by: str | None = None, descending: bool = True, padding: str = "post",
                 truncating: str = "post", lengths: bool = False, dtype: DTypeLike = np.float32,
                 fixed: bool = True, pad_mode: str = "constant", layout: str = "padded",
                 standardize: Mapping[str, Standardize | PlainMapping] | None = None,
                 mask: bool = False, empty: str = "keep") -> None:
        where = "Ragged"
        _check_forms(where, pad_mode, layout, padding, bool(mask))
        if max_len is not None and (isinstance(max_len, bool) or not isinstance(max_len, (int, np.integer))
                                    or not 1 <= max_len <= MAX_SLOTS):
            raise SchemaError(f"{where}: max_len must be a positive int (prong slots per row, at most "
                              f"{MAX_SLOTS}) or None (the batch's longest row), got {max_len!r}")
        for opt, val in (("padding", padding), ("truncating", truncating)):
            if val not in ("post", "pre"):
                raise SchemaError(f"{where}: {opt} must be 'post' or 'pre', got {val!r}")
        if sort_by is not None and not isinstance(sort_by, str):
            raise SchemaError(f"{where}: sort_by must be a variable name, got {sort_by!r}")
        pad = float(number_option(pad_value, "pad_value", where, nan=True))
        values: dict[str, Any] = dict(
            vars=_var_list(vars, where), max_len=None if max_len is None else int(max_len),
            pad_value=pad, sort_by=sort_by, descending=bool(descending), padding=padding,
            truncating=truncating, lengths=bool(lengths), dtype=_dtype_name(dtype, where),
            fixed=bool(fixed), pad_mode=pad_mode, layout=layout, mask=bool(mask),
            empty=check_empty(empty, where))
        values["standardize"] = check_standardize(standardize, values["vars"], where)
        for key, val in values.items():
            object.__setattr__(self, key, val)

    def to_dict(self) -> PlainDict:
        """The field as a table of a spec file.

        Returns
        -------
        dict
            ``type = "ragged"``, ``vars`` and every option (NaN as a string).
        """
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["vars"] = list(self.vars)
        out["pad_value"] = _json_float(self.pad_value)
        for key in _FORM_DEFAULTS:  # written only when set: older spec files stay as they were
            if out[key] == _FORM_DEFAULTS[key]:
                del out[key]
        if "standardize" in out:
            out["standardize"] = standardize_to_dict(self.standardize)
        return {"type": "ragged", **out}

    @property
    def form(self) -> Form:
        """The output form ``layout`` names (:mod:`lstm_data.batching.spec.forms`).

        It says what the field's outputs are, their shapes, mask and padded fill.
        """
        return form_of(self.layout)

    def _suffixes(self) -> list[str]:
        return self.form.suffixes(self)

    def __eq__(self, other: object) -> bool:  # NaN pad values compare equal
        return isinstance(other, Ragged) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(repr(self.to_dict()))

    def __repr__(self) -> str:
        opts = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)[1:]
                if getattr(self, f.name) != (f.default if f.name != "standardize" else {})]
        return f"Ragged({list(self.vars)!r}{''.join(', ' + o for o in opts)})"


#: the form options of ``Ragged`` left out of its table when at their defaults
_FORM_DEFAULTS: dict[str, Any] = {"pad_mode": "constant", "layout": "padded", "standardize": {}, "mask": False,
                                  "empty": "keep"}


def _check_forms(where: str, pad_mode: Any, layout: Any, padding: Any, mask: bool) -> None:
    """Raise the SchemaError of ``Ragged`` form options that are unknown or do not go together."""
    if pad_mode not in PAD_MODES:
        raise SchemaError(f"{where}: pad_mode must be one of {PAD_MODES}, got {pad_mode!r}")
    form = form_of(layout, where)
    if pad_mode == "wrap" and padding == "pre":
        raise SchemaError(f"{where}: pad_mode='wrap' repeats a row's elements after them and so "
                          "leaves no slot for padding='pre'; use padding='post'")
    form.check(where, pad_mode, mask)


Field = Union[Scalars, Ragged]


def field_from_dict(table: Mapping[str, Any], *, where: str = "field") -> Field:
    """Build a field from its TOML/JSON table (``type`` plus constructor options).

    Raises
    ------
    SchemaError
        Unknown ``type`` or unknown/invalid options, naming ``where``.
    """
    if not isinstance(table, Mapping):
        raise SchemaError(f"{where}: expected a table, got {table!r}")
    opts = dict(table)
    kind = opts.pop("type", None)
    classes: dict[str, type[Scalars] | type[Ragged]] = {"scalars": Scalars, "ragged": Ragged}
    if not isinstance(kind, str) or kind not in classes:
        raise SchemaError(f"{where}: type must be 'scalars' or 'ragged', got {kind!r}")
    cls = classes[kind]
    allowed = {f.name for f in fields(cls)}
    unknown = sorted(set(opts) - allowed)
    if unknown:
        raise SchemaError(f"{where}: unknown option(s) {unknown} for {kind}; allowed: {sorted(allowed)}")
    if "vars" not in opts:
        raise SchemaError(f"{where}: missing 'vars'")
    if isinstance(opts.get("pad_value"), str):
        try:
            opts["pad_value"] = float(opts["pad_value"])
        except ValueError:
            raise SchemaError(f"{where}: pad_value must be a number, got {opts['pad_value']!r}") from None
    try:
        return cls(**opts)
    except SchemaError as exc:
        raise SchemaError(f"{where}: {exc.message}", variable=exc.variable) from None
