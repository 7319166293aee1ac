"""The file forms of a :class:`~lstm_data.batching.spec.batch_spec.BatchSpec`, as functions.

A spec as plain data and TOML (:func:`spec_to_dict`, :func:`spec_from_dict`,
:func:`spec_from_toml`) and the spec of lstm_ee's ``Config`` (:func:`spec_from_lstm_ee`,
keys checked by :mod:`lstm_data.batching.spec.lstm_ee`); weaver-core's YAML is read by
:mod:`lstm_data.batching.spec.weaver`. Each function that makes a spec takes the spec class
to build (``BatchSpec`` or a subclass), so this module never imports it; ``BatchSpec``'s
``to_dict``, ``from_dict``, ``to_toml``, ``from_toml``, ``from_lstm_ee`` and ``from_weaver``
call them.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, TypeVar

from lstm_data._util.declared import suggest, toml_text
from lstm_data._util.spec_files import load_toml
from lstm_data.batching.spec.augment import Noise, augment_to_dict
from lstm_data.batching.spec.fields import Field, Ragged, Scalars, field_from_dict
from lstm_data.batching.spec.lstm_ee import check_lstm_ee_keys
from lstm_data.batching.spec.version import SPEC_VERSION, spec_version, warn_implied_padding, with_version_defaults
from lstm_data.errors import OptionError, SchemaError

if TYPE_CHECKING:
    from os import PathLike

__all__ = ["SpecParts", "spec_to_dict", "spec_from_dict", "spec_from_toml", "spec_from_lstm_ee"]

#: the spec class a reader builds (``BatchSpec`` or a subclass)
S = TypeVar("S")


class SpecParts(Protocol):
    """What :func:`spec_to_dict` reads of a spec: its declared parts."""

    @property
    def inputs(self) -> Mapping[str, Field]: ...
    @property
    def targets(self) -> Mapping[str, Field]: ...
    @property
    def nan_to(self) -> float | None: ...
    @property
    def pad_to_multiple_of(self) -> int | None: ...
    @property
    def augment(self) -> Mapping[str, Noise] | None: ...
    @property
    def derived(self) -> Mapping[str, str]: ...
    @property
    def selection(self) -> str | None: ...


def spec_to_dict(spec: SpecParts) -> dict[str, Any]:
    """``spec`` as plain data: what :meth:`~lstm_data.batching.spec.batch_spec.BatchSpec.to_dict`
    returns (see there for its keys) and ``BatchSpec.from_dict`` reads back."""
    out: dict[str, Any] = {"version": SPEC_VERSION}
    if spec.nan_to is not None:
        out["nan_to"] = spec.nan_to
    if spec.pad_to_multiple_of is not None:
        out["pad_to_multiple_of"] = spec.pad_to_multiple_of
    if spec.selection is not None:
        out["selection"] = spec.selection
    if spec.derived:
        out["derived"] = dict(spec.derived)
    if spec.augment:
        out["augment"] = augment_to_dict(spec.augment)
    out["inputs"] = {n: f.to_dict() for n, f in spec.inputs.items()}
    out["targets"] = {n: f.to_dict() for n, f in spec.targets.items()}
    return out


def spec_to_toml(spec: SpecParts) -> str:
    """The spec as TOML text: ``version = 2``, ``[inputs.NAME]`` and ``[targets.NAME]`` tables.

    Returns
    -------
    str
        What :meth:`~lstm_data.batching.spec.batch_spec.BatchSpec.from_toml` reads back (bitwise the same batches).
    """
    return toml_text(spec_to_dict(spec))


def spec_from_dict(cls: Callable[..., S], data: Mapping[str, Any], *, source: str = "spec") -> S:
    """Build a spec from ``{"inputs": {name: field}, "targets": {...}}`` (TOML/JSON form).

    Each field is a table with ``type = "scalars"`` or ``"ragged"``, ``vars`` and
    the options of that field type. Without a ``version`` key the data is read as
    format version 1: a ``ragged`` table without ``pad_value`` pads with NaN, as
    it did when it was written (see :mod:`lstm_data.batching.spec.version`).

    Parameters
    ----------
    cls
        The spec class to build (``BatchSpec`` or a subclass).
    data
        The tables; ``order`` and ``read`` tables (other option objects' homes in a
        shared file) are ignored.
    source
        Named in errors as the data's origin (a file name).

    Returns
    -------
    spec
        An instance of ``cls``.
    """
    known = {"derived", "selection", "version", "inputs", "targets", "nan_to", "pad_to_multiple_of", "augment"}
    # the tables of the other option objects may share the file ([order], [read])
    unknown = set(data) - known - {"order", "read"}
    if unknown:
        name = sorted(unknown)[0]
        raise SchemaError(f"{source}: unknown top-level key {name!r}{suggest(name, known)}; "
                          f"expected {', '.join(repr(k) for k in sorted(known))}")
    version = spec_version(data, source)
    warn_implied_padding(data, source)
    parts: dict[str, dict[str, Field]] = {}
    for part in ("inputs", "targets"):
        tables = data.get(part, {})
        if not isinstance(tables, Mapping):
            raise SchemaError(f"{source}: [{part}] must be a table of fields")
        parts[part] = {name: field_from_dict(with_version_defaults(tbl, version) if isinstance(tbl, Mapping)
                                             else tbl, where=f"{source}: [{part}.{name}]")
                       for name, tbl in tables.items()}
    try:
        return cls(**parts, derived=data.get("derived"), selection=data.get("selection"),
                   nan_to=data.get("nan_to"), pad_to_multiple_of=data.get("pad_to_multiple_of"),
                   augment=data.get("augment"))
    except OptionError as exc:  # named with the file the options came from
        raise OptionError(f"{source}: {exc}") from None


def spec_from_toml(cls: Callable[..., S], path: str | PathLike[str]) -> S:
    """Load a spec from a TOML file with ``[inputs.NAME]`` / ``[targets.NAME]`` tables.

    Example file::

        version = 2

        [inputs.input_png3d]
        type = "ragged"
        vars = ["png.calE", "png.len"]
        max_len = 20
        pad_value = nan

    The file is read within the bounds of :mod:`lstm_data._util.spec_files` (its size
    and nesting), before anything of it is parsed.

    Parameters
    ----------
    cls
        The spec class to build (``BatchSpec`` or a subclass).
    path
        The TOML file (its ``[order]`` and ``[read]`` tables belong to the other option objects).

    Returns
    -------
    spec
        An instance of ``cls``.

    Raises
    ------
    SchemaError
        The file is too large, not valid TOML, nested too deep, or not a valid spec.
    """
    data = load_toml(path, lambda message: SchemaError(message, file=str(path)))
    try:
        return spec_from_dict(cls, data, source=str(path))
    except SchemaError as exc:  # each error of the file's spec names the file
        raise exc if exc.file is not None else exc.located(file=str(path)) from None


def spec_from_lstm_ee(cls: Callable[..., S], config: Any) -> S:
    """The spec of lstm_ee's ``DataGenerator`` batches, as an instance of ``cls``.

    What :meth:`~lstm_data.batching.spec.batch_spec.BatchSpec.from_lstm_ee` returns: its
    docstring lists the keys read, the layout and the errors.

    Parameters
    ----------
    cls
        The spec class to build (``BatchSpec`` or a subclass).
    config
        A dict or an object with lstm_ee's ``Config`` attributes.

    Returns
    -------
    spec
        An instance of ``cls``.
    """
    def get(key: str) -> Any:
        if isinstance(config, Mapping):
            return config.get(key)
        return getattr(config, key, None)

    check_lstm_ee_keys(config)
    max_prongs = get("max_prongs")
    inputs: dict[str, Field] = {}
    if get("vars_input_slice") is not None:
        inputs["input_slice"] = Scalars(get("vars_input_slice"))
    for key, name in (("vars_input_png3d", "input_png3d"), ("vars_input_png2d", "input_png2d")):
        if get(key) is not None:
            inputs[name] = Ragged(get(key), max_len=max_prongs, fixed=False, pad_value=math.nan)
    targets: dict[str, Field] = {}
    for key, name in (("var_target_total", "target_total"), ("var_target_primary", "target_primary")):
        if get(key) is not None:
            targets[name] = Scalars([get(key)])
    return cls(inputs=inputs, targets=targets)
