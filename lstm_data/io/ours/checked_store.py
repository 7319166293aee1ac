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
  ``FormatError``, where zarr would fill it with the fill value;
* a local store: a file is looked at before it is read
  (:func:`~lstm_data.io.ours.store_files.read_store_file`): a FIFO, a device or a
  socket in place of a file is a ``FormatError`` (never opened), and in a store
  with a manifest a file whose size is not the recorded one is refused unread (a
  symbolic link to ``/dev/zero``, a sparse file of gigabytes);
* every store, local or remote: no file is read beyond its bound, and no chunk is
  handed to zarr's codecs before its frame headers say it decodes to one chunk
  (:mod:`lstm_data.io.ours.store_bounds`): a metadata file of gigabytes or a chunk
  that inflates to gigabytes is a ``FormatError`` naming the store, the file (the
  array and chunk) and the size, at bounded memory.

Stores written before manifests keep opening without the first check (their
readers say so in their ``notes``).
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
from typing import TYPE_CHECKING, Any, Callable

from zarr.abc.store import Store
from zarr.storage import WrapperStore

from lstm_data._util.confined import check_plain_name, confined
from lstm_data._util.redact import redact
from lstm_data.errors import FormatError
from lstm_data.io.ours.layout import every_chunk_stored
from lstm_data.io.ours.manifest import MANIFEST_ATTR, MANIFEST_KEY, META_NAMES, Manifest, crc32c, split_key
from lstm_data.io.ours.store_bounds import META_MAX_BYTES, ChunkForm, chunk_form, read_meta_file, stored_bound, too_large
from lstm_data.io.ours.store_files import look_at, read_store_file
from lstm_data.io.plumbing.remote import is_url, remote_filesystem, url_credentials
from lstm_data.io.plumbing.remote_errors import TRANSPORT_ERRORS, RemoteSettings

if TYPE_CHECKING:
    import zarr
    from zarr.abc.store import ByteRequest
    from zarr.core.buffer import Buffer, BufferPrototype

__all__ = ["CheckedStore", "open_checked", "records_every_chunk", "base_store", "quiet_leftover_tasks",
           "settle_zarr", "store_token", "opened_token", "Token", "MANIFEST_FILE", "confine_node"]

#: the manifest's file in a store
MANIFEST_FILE = f"{MANIFEST_KEY}/zarr.json"


class _State:
    """What a :class:`CheckedStore` and its copies (zarr makes some) share."""

    def __init__(self, name: str, manifest: Manifest | None) -> None:
        self.name = name
        self.manifest = manifest
        self.every_chunk = manifest is not None
        #: CRC-32C of the root ``zarr.json`` as first read (see :func:`opened_token`)
        self.root_digest: int | None = None
        #: array path -> what its chunks must be (``None``: not checked), from its ``zarr.json``
        self.forms: dict[str, ChunkForm | None] = {}


class CheckedStore(WrapperStore[Store]):
    """A store whose reads are checked against the store's manifest and every-chunk record."""

    def __init__(self, store: Store, state: _State) -> None:
        from zarr.storage import LocalStore

        super().__init__(store)
        self.state = state
        #: the directory of a local store, whose files are looked at before they are read
        self._root = str(store.root) if isinstance(store, LocalStore) else None

    def _with_store(self, store: Store) -> "CheckedStore":
        return type(self)(store, self.state)

    @property
    def inner(self) -> Store:
        """The wrapped store."""
        return self._store

    async def get(self, key: str, prototype: BufferPrototype,
                  byte_range: ByteRequest | None = None) -> Buffer | None:
        st = self.state
        is_meta = key.rsplit("/", 1)[-1] in META_NAMES
        array, chunk = ("", "") if is_meta else split_key(key)
        form = None if is_meta or byte_range is not None else await self._form(array, prototype)
        if self._root is None:
            data = await self._get_remote(key, prototype, byte_range, self._limit(key, is_meta, form))
        else:
            data = await self._get_local(self._root, key, prototype, byte_range, form)
        if key == "zarr.json" and data is not None and byte_range is None and st.root_digest is None:
            st.root_digest = crc32c(data.as_numpy_array())
        if data is None:
            if not is_meta and st.every_chunk:
                index = chunk[2:].split("/")[0] if chunk.startswith("c/") else chunk
                raise FormatError(f"chunk {index} of array {array!r} is missing (chunk key "
                                  f"{chunk!r}): every chunk of this store was written, so it was "
                                  "lost or deleted", file=self._where(key))
            return data
        if byte_range is not None:
            return data
        if st.manifest is not None:
            st.manifest.check(key, data.as_numpy_array(), file=st.name)
        if is_meta:
            self._learn(key, data)
        elif form is not None:  # before zarr's codecs inflate it
            index = chunk[2:].split("/")[0] if chunk.startswith("c/") else chunk
            form.check(data.as_numpy_array(), f"chunk {index} of array {array!r}", self._where(key))
        return data

    def _learn(self, key: str, data: Buffer) -> None:
        """Parse metadata file ``key`` (a damaged one is an error) and keep what an array's chunks must be."""
        try:
            meta = json.loads(data.to_bytes())
        except ValueError as exc:  # never a raw parse error
            raise FormatError(f"metadata file {key!r} is damaged (not JSON: {exc})",
                              file=self._where(key)) from None
        if key.endswith("zarr.json") and isinstance(meta, dict):
            self.state.forms[key[:-len("zarr.json")].rstrip("/")] = chunk_form(meta)

    async def _form(self, array: str, prototype: BufferPrototype) -> ChunkForm | None:
        """What the chunks of ``array`` must be: read from its ``zarr.json`` the first time."""
        forms = self.state.forms
        if array not in forms:
            forms[array] = None
            await self.get(f"{array}/zarr.json" if array else "zarr.json", prototype)
        return forms[array]

    def _limit(self, key: str, is_meta: bool, form: ChunkForm | None) -> int | None:
        """The most bytes file ``key`` may hold: its record in the manifest, else
        :data:`META_MAX_BYTES` for metadata and what any encoding of a chunk takes for a chunk."""
        manifest = self.state.manifest
        if manifest is not None:
            recorded = manifest.recorded_size(key)
            if recorded is not None:
                return recorded
        if is_meta:
            return META_MAX_BYTES
        return None if form is None else stored_bound(form.nbytes)

    async def _get_remote(self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None,
                          limit: int | None) -> Buffer | None:
        """``get`` from a store at a URL: a whole file read to at most ``limit`` bytes and one more."""
        from zarr.abc.store import RangeByteRequest

        if byte_range is not None or limit is None:
            return await super().get(key, prototype, byte_range)
        data = await super().get(key, prototype, RangeByteRequest(0, limit + 1))
        manifest = self.state.manifest
        if data is not None and len(data) > limit and (manifest is None or manifest.recorded_size(key) is None):
            raise self._too_large(key, f"more than {limit:,} bytes", limit)
        return data  # one byte too many fails the manifest's check, which says what it is

    def _too_large(self, key: str, size: str, limit: int) -> FormatError:
        why = "any metadata file of a store may be" if key.rsplit("/", 1)[-1] in META_NAMES else \
            "any encoding of one of its chunks takes"
        return too_large(f"store file {key!r}", size, limit, self._where(key), why)

    async def _get_local(self, root: str, key: str, prototype: BufferPrototype,
                         byte_range: ByteRequest | None, form: ChunkForm | None) -> Buffer | None:
        """``get`` from a local store: the file looked at, then read (or ``None`` if absent)."""
        inner: Any = self._store
        if not inner._is_open:  # as LocalStore.get does
            await inner._open()
        path = os.path.join(root, key)
        if byte_range is not None:  # a part of a file: looked at here, read by zarr
            try:
                await asyncio.to_thread(look_at, path, f"store file {key!r}", self._where(key))
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                pass
            return await super().get(key, prototype, byte_range)
        try:
            raw, _ = await asyncio.to_thread(read_store_file, path, what=f"store file {key!r}",
                                             file=self._where(key), check_size=self._size_check(key, form))
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        return prototype.buffer.from_bytes(raw)

    def _where(self, key: str) -> str:
        return f"{self.state.name}/{key}" if self.state.name else key

    def _size_check(self, key: str, form: ChunkForm | None) -> Callable[[int], None]:
        """What refuses the size of file ``key`` before it is read: its record in the manifest, else
        the bound of :meth:`_limit`."""
        manifest = self.state.manifest
        name = self.state.name
        limit = self._limit(key, key.rsplit("/", 1)[-1] in META_NAMES, form)

        def check(size: int) -> None:
            if manifest is not None:
                manifest.check_size(key, size, file=name)  # the record, where there is one
            if limit is not None and size > limit:
                raise self._too_large(key, f"{size:,} bytes", limit)
        return check


#: what tells one store at a path from another written there: the CRC-32C of its root
#: ``zarr.json`` and of its manifest file (``None`` without one)
Token = tuple[int, "int | None"]


def opened_token(root: zarr.Group) -> Token | None:
    """The :data:`Token` of the store of ``root`` (opened by :func:`open_checked`) as it was
    read at open, at no cost; ``None`` if unknown."""
    store = root.store
    if not isinstance(store, CheckedStore) or store.state.root_digest is None:
        return None
    manifest = store.state.manifest
    return store.state.root_digest, None if manifest is None else manifest.token


def store_token(path: Any, name: str, remote: RemoteSettings | None = None) -> Token | None:
    """The :data:`Token` of the store at ``path`` as it is now, read anew; ``None`` when there
    is no store there, or it cannot be read.

    A store written anew at the same place (``precompute --overwrite``) has another
    one: a handle compares it with :func:`opened_token` when a read fails.
    """
    base = base_store(path, remote)
    try:
        root = read_meta_file(base, "zarr.json", name)
        manifest = read_meta_file(base, MANIFEST_FILE, name)
    except Exception:  # noqa: BLE001 - unreadable now (removed, refused, a server's error): no token
        return None
    if root is None:
        return None
    return crc32c(root), None if manifest is None else crc32c(manifest)


def confine_node(root: zarr.Group, key: Any, *, file: str, attr: str) -> str:
    """``key``, a node path read from the store's metadata (attribute ``attr``), if it stays in the store.

    Every store: no ``..`` component, not absolute. A local store: resolved too, so a
    node directory that is a symbolic link leading out of the store is refused.

    Parameters
    ----------
    root
        The store's root group (opened by :func:`open_checked`).
    key
        The node path as read.
    file
        The store, named in the error.
    attr
        The metadata key it was read from, named in the error.

    Returns
    -------
    str
        ``key``.

    Raises
    ------
    FormatError
        ``key`` leaves the store.
    """
    from zarr.storage import LocalStore

    plain = check_plain_name(key, file=file, key=attr)
    store = root.store.inner if isinstance(root.store, CheckedStore) else root.store
    if isinstance(store, LocalStore):
        confined(str(store.root), plain, file=file, key=attr)
    return plain


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
        if is_url(text):  # credentials as the filesystem's auth, never in a URL zarr or fsspec log
            fs, root = remote_filesystem(text, remote, asynchronous=True)
            if not fs.async_impl:
                clean, options = url_credentials(text)
                return FsspecStore.from_url(clean, storage_options=options, read_only=True)
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

    name = redact(name)
    quiet_leftover_tasks()
    base = base_store(path, remote)
    manifest_file = MANIFEST_FILE
    try:
        raw = read_meta_file(base, manifest_file, name)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raw = None
    except FormatError:
        raise
    except TRANSPORT_ERRORS:  # a server's failure, said as such (naming the URL)
        raise
    except Exception as exc:  # noqa: BLE001 - a server's refusal: said without credentials
        if not (isinstance(path, str) and is_url(path)):
            raise
        raise OSError(f"cannot read {name}: {type(exc).__name__}: {redact(exc)}") from None
    manifest = None if raw is None else Manifest.parse(raw, file=f"{name}/{manifest_file}")
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
