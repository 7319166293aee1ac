"""Open a zarr v3 store so that what zarr reads from it is checked before zarr uses it.

:func:`open_checked` wraps the store (a local directory, an fsspec URL, or any
zarr store) in :class:`CheckedStore`, which sees every key zarr-python asks for:

* a store with a manifest (:mod:`lstm_data.io.ours.manifest`): every metadata file
  and every chunk is compared with its record, so edited or damaged metadata and
  moved, swapped or foreign chunks are a :class:`~lstm_data.errors.FormatError`
  naming the store, the file and (for chunks) the array and chunk, before zarr
  parses or decodes them;
* a store that records that every chunk was written
  (:data:`~lstm_data.io.ours.layout.EVERY_CHUNK_ATTR`): a missing chunk is a
  ``FormatError``, where zarr would fill it with the fill value.

Stores written before manifests keep opening without the first check (their
readers say so in their ``notes``).
"""
from __future__ import annotations

import json
import logging
import os
from typing import TYPE_CHECKING, Any

from zarr.abc.store import Store
from zarr.storage import WrapperStore

from lstm_data._util.redact import redact
from lstm_data.errors import FormatError
from lstm_data.io.ours.layout import every_chunk_stored
from lstm_data.io.ours.manifest import MANIFEST_ATTR, MANIFEST_KEY, META_NAMES, Manifest, split_key
from lstm_data.io.plumbing.remote import is_url, remote_filesystem
from lstm_data.io.plumbing.remote_errors import TRANSPORT_ERRORS, RemoteSettings

if TYPE_CHECKING:
    import zarr
    from zarr.abc.store import ByteRequest
    from zarr.core.buffer import Buffer, BufferPrototype

__all__ = ["CheckedStore", "open_checked", "records_every_chunk", "base_store", "quiet_leftover_tasks",
           "settle_zarr"]


class _State:
    """What a :class:`CheckedStore` and its copies (zarr makes some) share."""

    def __init__(self, name: str, manifest: Manifest | None) -> None:
        self.name = name
        self.manifest = manifest
        self.every_chunk = manifest is not None


class CheckedStore(WrapperStore[Store]):
    """A store whose reads are checked against the store's manifest and every-chunk record."""

    def __init__(self, store: Store, state: _State) -> None:
        super().__init__(store)
        self.state = state

    def _with_store(self, store: Store) -> "CheckedStore":
        return type(self)(store, self.state)

    @property
    def inner(self) -> Store:
        """The wrapped store."""
        return self._store

    async def get(self, key: str, prototype: BufferPrototype,
                  byte_range: ByteRequest | None = None) -> Buffer | None:
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
        elif is_meta and byte_range is None:  # no manifest: at least never a raw parse error
            try:
                json.loads(data.to_bytes())
            except ValueError as exc:
                raise FormatError(f"metadata file {key!r} is damaged (not JSON: {exc})",
                                  file=f"{st.name}/{key}" if st.name else key) from None
        return data


def records_every_chunk(root: zarr.Group) -> bool:
    """Whether the store of ``root`` (opened by :func:`open_checked`) records that every chunk was written."""
    store = root.store
    return isinstance(store, CheckedStore) and store.state.every_chunk


def base_store(path: Any, remote: RemoteSettings | None = None) -> Any:
    """The zarr store that ``zarr.open_group(path, mode="r")`` would read: read-only; a URL
    through :func:`~lstm_data.io.plumbing.remote.remote_filesystem` (for http(s): timeouts,
    retries and checked answers, as ``remote`` sets them)."""
    from zarr.storage import FsspecStore, LocalStore

    if isinstance(path, (str, os.PathLike)):
        text = os.fspath(path)
        if is_url(text):
            fs, root = remote_filesystem(text, remote, asynchronous=True)
            if not fs.async_impl:
                return FsspecStore.from_url(text, read_only=True)
            return FsspecStore(fs, read_only=True, path=root)
        return LocalStore(text, read_only=True)
    return path


def open_checked(path: Any, name: str, remote: RemoteSettings | None = None) -> tuple[zarr.Group, Manifest | None]:
    """``(root group, manifest or None)`` of the zarr v3 store at ``path``, read through a
    :class:`CheckedStore`.

    Parameters
    ----------
    path
        A directory, an fsspec URL, or a zarr store.
    name
        The store as named in errors (credentials redacted).
    remote
        Timeouts and retries of the reads of a store at a URL.

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
    quiet_leftover_tasks()
    base = base_store(path, remote)
    manifest_file = f"{MANIFEST_KEY}/zarr.json"
    try:
        raw = sync(base.get(manifest_file, default_buffer_prototype()))
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raw = None
    except TRANSPORT_ERRORS:  # said as such, naming the URL
        raise
    except Exception as exc:  # noqa: BLE001 - a server's refusal: said without credentials
        if not (isinstance(path, str) and is_url(path)):
            raise
        raise OSError(f"cannot read {name}: {type(exc).__name__}: {redact(exc)}") from None
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


#: asyncio's words for the tasks zarr-python leaves behind when one read or write of a batch fails
_LEFTOVERS = ("Task exception was never retrieved", "Task was destroyed but it is pending!")


def _on_loop_error(loop: Any, context: dict[str, Any]) -> None:
    if context.get("message") in _LEFTOVERS:  # siblings of an error already raised to the caller
        logging.getLogger("lstm_data").debug("zarr: %s (%s)", context.get("message"),
                                              redact(context.get("exception") or ""))
        return
    loop.default_exception_handler(context)


def quiet_leftover_tasks() -> None:
    """Log at DEBUG, not on stderr, the sibling tasks zarr-python abandons when one chunk of a
    read or write fails (the failure itself is raised, as a located error, to the caller)."""
    from zarr.core.sync import _get_loop

    loop = _get_loop()
    if loop.get_exception_handler() is not _on_loop_error:
        loop.set_exception_handler(_on_loop_error)


def settle_zarr(timeout: float = 60.0) -> None:
    """Wait until the tasks zarr-python still runs have ended (at most ``timeout`` seconds).

    When one chunk write of a batch fails, zarr raises at once while its sibling
    writes keep running: a temporary output removed before they end is written
    into again and left behind. Called before such a removal.
    """
    import asyncio

    from zarr.core import sync as zsync

    loop = zsync.loop[0]
    if loop is None or not loop.is_running():
        return

    async def _others() -> None:
        me = asyncio.current_task()
        pending = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=timeout)

    try:
        asyncio.run_coroutine_threadsafe(_others(), loop).result(timeout + 5)
    except Exception:  # noqa: BLE001 - best effort: the removal that follows retries
        logging.getLogger("lstm_data").debug("zarr tasks still running after %.0f s", timeout)
