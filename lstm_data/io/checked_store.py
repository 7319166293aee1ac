"""Open a zarr v3 store so that what zarr reads from it is checked before zarr uses it.

:func:`open_checked` wraps the store (a local directory, an fsspec URL, or any
zarr store) in :class:`CheckedStore`, which sees every key zarr-python asks for:

* a store with a manifest (:mod:`lstm_data.io.manifest`): every metadata file
  and every chunk is compared with its record, so edited or damaged metadata and
  moved, swapped or foreign chunks are a :class:`~lstm_data.errors.FormatError`
  naming the store, the file and (for chunks) the array and chunk, before zarr
  parses or decodes them;
* a store that records that every chunk was written
  (:data:`~lstm_data.io.layout.EVERY_CHUNK_ATTR`): a missing chunk is a
  ``FormatError``, where zarr would fill it with the fill value.

Stores written before manifests keep opening without the first check (their
readers say so in their ``notes``).
"""
from __future__ import annotations

import os
from typing import Any

from zarr.storage import WrapperStore

from lstm_data._util.redact import redact
from lstm_data.errors import FormatError
from lstm_data.io.layout import every_chunk_stored
from lstm_data.io.manifest import MANIFEST_ATTR, MANIFEST_KEY, META_NAMES, Manifest, split_key
from lstm_data.io.remote import is_url

__all__ = ["CheckedStore", "open_checked", "base_store"]


class _State:
    """What a :class:`CheckedStore` and its copies (zarr makes some) share."""

    def __init__(self, name: str, manifest: Manifest | None) -> None:
        self.name = name
        self.manifest = manifest
        self.every_chunk = manifest is not None


class CheckedStore(WrapperStore):
    """A store whose reads are checked against the store's manifest and every-chunk record."""

    def __init__(self, store: Any, state: _State) -> None:
        super().__init__(store)
        self.state = state

    def _with_store(self, store: Any) -> "CheckedStore":
        return type(self)(store, self.state)

    @property
    def inner(self) -> Any:
        """The wrapped store."""
        return self._store

    async def get(self, key, prototype, byte_range=None):
        data = await super().get(key, prototype, byte_range)
        st = self.state
        is_meta = key.rsplit("/", 1)[-1] in META_NAMES
        if data is None:
            if not is_meta and st.every_chunk:
                array, chunk = split_key(key)
                index = chunk[2:].split("/")[0] if chunk.startswith("c/") else chunk
                raise FormatError(f"chunk {index} of array {array!r} is missing (chunk key "
                                  f"{chunk!r}): every chunk of this store was written, so it was "
                                  "lost or deleted", file=f"{st.name}/{key}" if st.name else key)
            return data
        if st.manifest is not None and byte_range is None:
            st.manifest.check(key, data.as_numpy_array(), file=st.name)
        return data


def base_store(path: Any) -> Any:
    """The zarr store that ``zarr.open_group(path, mode="r")`` would read: read-only."""
    from zarr.storage import FsspecStore, LocalStore

    if isinstance(path, (str, os.PathLike)):
        text = os.fspath(path)
        if is_url(text):
            return FsspecStore.from_url(text, read_only=True)
        return LocalStore(text, read_only=True)
    return path


def open_checked(path: Any, name: str):
    """``(root group, manifest or None)`` of the zarr v3 store at ``path``, read through a
    :class:`CheckedStore`.

    Parameters
    ----------
    path
        A directory, an fsspec URL, or a zarr store.
    name
        The store as named in errors (credentials redacted).

    Raises
    ------
    FormatError
        A damaged manifest, a manifest that the root records but that is missing,
        or a root ``zarr.json`` that differs from its record.
    FileNotFoundError, ValueError, TypeError
        As ``zarr.open_group`` raises them (no store there).
    """
    import zarr
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.sync import sync

    name = redact(name)
    base = base_store(path)
    manifest_file = f"{MANIFEST_KEY}/zarr.json"
    try:
        raw = sync(base.get(manifest_file, default_buffer_prototype()))
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raw = None
    manifest = None if raw is None else Manifest.parse(raw.to_bytes(), file=f"{name}/{manifest_file}")
    state = _State(name, manifest)
    store = CheckedStore(base, state)
    root = zarr.open_group(store, mode="r", zarr_format=3)
    attrs = root.attrs.asdict()
    if manifest is None and attrs.get(MANIFEST_ATTR):
        raise FormatError(f"the store's manifest ({manifest_file}) is missing: it was written "
                          "with one, so it was lost or deleted; the store cannot be checked",
                          file=name)
    state.every_chunk = every_chunk_stored(attrs)
    return root, manifest
