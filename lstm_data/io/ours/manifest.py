"""The manifest of a zarr store we write: where every chunk and metadata file belongs.

A chunk's CRC-32C proves its bytes, not its place: two value chunks swapped, or a
chunk copied over another position or over another array's chunk, decode fine
and read as other numbers. And a damaged ``zarr.json`` (another dtype or byte
order, variables in another order, a flipped byte) is read by zarr before any
chunk checksum is looked at. So every store our writers make (datasets and
precomputed batch stores) ends with a manifest: for every file of the store,
keyed by its path *inside the store* (which survives the final rename and
serving over HTTP), its size and a CRC-32C digest.

* a chunk of an array whose codecs end with zarr's ``crc32c`` is recorded by that
  trailing checksum (the CRC-32C of the chunk's other bytes): writing the
  manifest reads 4 bytes per chunk, and a reader compares 4 bytes it already
  holds, after the codec verified them against the chunk's bytes;
* other chunks, and every metadata file (``zarr.json``), by the CRC-32C of the
  whole file.

The manifest is the attributes of the group :data:`MANIFEST_KEY`, written after
everything else (the root's attributes record :data:`MANIFEST_ATTR` before, so a
store that lost its manifest is an error, not an old store). It carries a
CRC-32C of its own content. Readers check it through
:mod:`lstm_data.io.ours.checked_store`, and check a file's size against its record
before reading it (:meth:`Manifest.check_size`): a file that cannot be the recorded
one is never read whole.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from lstm_data.errors import FormatError

__all__ = ["MANIFEST_KEY", "MANIFEST_ATTR", "Manifest", "write_manifest", "split_key",
           "crc32c", "UNCHECKED_NOTE", "REQUIRES", "check_requires"]

#: the group whose attributes hold the manifest (its ``zarr.json``)
MANIFEST_KEY = "_lstm_data_manifest"
#: root attribute of a store that has a manifest (written with the layout, before the manifest)
MANIFEST_ATTR = "lstm_data_manifest"
_FORMAT = "lstm_data.manifest"
_VERSION = 1
#: what every store written now requires of its reader, recorded as ``requires`` in the metadata
#: every reader reads first (the layout or batch-store attribute): ``"manifest"``, its manifest
#: is there and checks every file
REQUIRES = ("manifest",)
#: metadata file names (zarr v3, and the v2 names zarr may probe)
META_NAMES = ("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata")
#: what ``inspect`` says of a store without a manifest
UNCHECKED_NOTE = ("has no manifest (written by an older lstm_data): chunks are not checked for "
                  "their place (a chunk moved to another position or array reads as other "
                  "numbers) and edited metadata is not detected")


def crc32c(data: Any) -> int:
    """CRC-32C of a bytes-like object."""
    import google_crc32c  # zarr's own dependency

    return int(google_crc32c.value(data))


def split_key(key: str) -> tuple[str, str]:
    """``(array path, chunk key)`` of a store key such as ``png/values/c/3/0``."""
    if key.startswith("c/"):
        return "", key
    array, sep, rest = key.rpartition("/c/")
    if sep:
        return array, "c/" + rest
    array, _, rest = key.rpartition("/")
    return array, rest


def check_requires(requires: Any, *, has_manifest: bool, name: str, attribute: str, redo: str) -> None:
    """Raise :class:`FormatError` unless a store that records ``requires`` can be read as it requires.

    A store that requires its manifest but has none lost it (deleted with its root
    attribute, to read chunks moved or swapped unchecked, or by accident): refused,
    naming what is missing. A requirement this release does not know (a store of a
    newer lstm_data) is refused too.

    Parameters
    ----------
    requires
        The recorded list (``None``: a store written before it records none).
    has_manifest
        Whether the store's manifest was found (and parsed).
    name
        The store, for messages.
    attribute
        The root attribute holding ``requires``, for messages.
    redo
        How to write the store anew, for messages.
    """
    requires = [] if requires is None else requires
    if not isinstance(requires, list) or not all(isinstance(r, str) for r in requires):
        raise FormatError(f"damaged store metadata: 'requires' of the root attribute {attribute} is "
                          f"{requires!r}, not a list of names", file=name)
    unknown = sorted(set(requires) - set(REQUIRES))
    if unknown:
        raise FormatError(f"the store requires {', '.join(map(repr, unknown))}, which this lstm_data "
                          "does not know (written by a newer lstm_data); upgrade lstm_data", file=name)
    if "manifest" in requires and not has_manifest:
        raise FormatError(f"the store's manifest ({MANIFEST_KEY}/zarr.json) is missing, but its metadata "
                          f"('requires' of the root attribute {attribute}) records that it was "
                          "written with one: it was deleted or lost, so moved, swapped or foreign "
                          f"chunks and edited metadata would go undetected; refused. {redo}", file=name)


def _trailer(path: Path) -> tuple[int, int]:
    """``(size, last 4 bytes as a little-endian int)`` of a file."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size < 4:
            return size, -1
        fh.seek(size - 4)
        return size, int.from_bytes(fh.read(4), "little")


def _body_digest(body: Mapping[str, Any]) -> int:
    return crc32c(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())


def _arrays_of(root: Path, files: list[str]) -> dict[str, bool]:
    """Array path -> whether its codecs end with ``crc32c``, from the store's ``zarr.json`` files."""
    arrays = {}
    for key in files:
        if key.rsplit("/", 1)[-1] != "zarr.json":
            continue
        meta = json.loads((root / key).read_bytes())
        if meta.get("node_type") != "array":
            continue
        codecs = meta.get("codecs") or []
        last = codecs[-1].get("name") if codecs and isinstance(codecs[-1], dict) else None
        arrays[key[:-len("zarr.json")].rstrip("/")] = last == "crc32c"
    return arrays


def write_manifest(directory: str | os.PathLike[str]) -> None:
    """Record every file of the zarr store at ``directory`` in its manifest (call it last).

    Chunks of arrays with a ``crc32c`` codec cost one 4-byte read each; other
    files are read whole once. A manifest already there is replaced.
    """
    import zarr

    root = Path(directory)
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    files = [f for f in files if not f.startswith(MANIFEST_KEY + "/")]
    arrays = _arrays_of(root, files)
    meta: dict[str, list[int]] = {}
    chunks: dict[str, dict[str, list[int]]] = {a: {} for a in arrays}
    for key in files:
        if key.rsplit("/", 1)[-1] in META_NAMES:
            data = (root / key).read_bytes()
            meta[key] = [len(data), crc32c(data)]
            continue
        array, chunk = split_key(key)
        if array not in arrays:  # not a chunk of an array: recorded whole
            data = (root / key).read_bytes()
            meta[key] = [len(data), crc32c(data)]
            continue
        if arrays[array]:
            size, digest = _trailer(root / key)
        else:
            data = (root / key).read_bytes()
            size, digest = len(data), crc32c(data)
        chunks[array][chunk] = [size, digest]
    body = {"format": _FORMAT, "version": _VERSION, "hash": "crc32c",
            "trailer": sorted(a for a, t in arrays.items() if t), "meta": meta, "chunks": chunks}
    group = zarr.open_group(str(root), mode="r+", zarr_format=3)
    group.create_group(MANIFEST_KEY, attributes={**body, "digest": _body_digest(body)},
                       overwrite=True)


@dataclass
class Manifest:
    """A loaded manifest: ``meta`` (key -> (size, digest)), ``chunks`` (array -> chunk key ->
    (size, digest)), ``trailer`` (arrays whose chunks are recorded by their CRC-32C trailer) and
    ``token`` (the CRC-32C of the manifest file as read: another store written at the same
    place has another one)."""

    meta: dict[str, tuple[int, int]]
    chunks: dict[str, dict[str, tuple[int, int]]]
    trailer: frozenset[str]
    token: int = 0

    @classmethod
    def parse(cls, raw: bytes, *, file: str) -> "Manifest":
        """The manifest in ``raw`` (its ``zarr.json``).

        Raises
        ------
        FormatError
            Not JSON, not a manifest, a newer version, or a content digest that
            does not match (``file`` names it).
        """
        try:
            doc = json.loads(bytes(raw))
            attrs = dict(doc.pop("attributes"))
            digest = attrs.pop("digest")
            ok = (attrs.get("format") == _FORMAT and digest == _body_digest(attrs)
                  and doc == {"zarr_format": 3, "node_type": "group"})
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            raise FormatError(f"the store's manifest is damaged ({type(exc).__name__}: {exc})",
                              file=file) from None
        if attrs.get("format") == _FORMAT and int(attrs.get("version", 0)) > _VERSION:
            raise FormatError(f"manifest version {attrs.get('version')} is newer than this "
                              "lstm_data reads; upgrade lstm_data", file=file)
        if not ok:
            raise FormatError("the store's manifest is damaged (its content digest does not "
                              "match)", file=file)
        try:
            meta = {k: (int(v[0]), int(v[1])) for k, v in attrs["meta"].items()}
            chunks = {a: {k: (int(v[0]), int(v[1])) for k, v in c.items()}
                      for a, c in attrs["chunks"].items()}
            return cls(meta, chunks, frozenset(attrs["trailer"]), crc32c(raw))
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise FormatError(f"the store's manifest is damaged ({exc})", file=file) from None

    def _meta_entry(self, key: str, *, file: str) -> tuple[int, int] | None:
        """The record of metadata file ``key`` (``None``: ``key`` is not a metadata file);
        a metadata file the manifest lacks is an error."""
        if key.rsplit("/", 1)[-1] not in META_NAMES and key not in self.meta:
            return None
        want = self.meta.get(key)
        if want is None:
            raise FormatError(f"metadata file {key!r} is not in the store's manifest: it was "
                              "added after the store was written", file=f"{file}/{key}")
        return want

    def _chunk_entry(self, array: str, chunk: str, *, file: str, index: int | None) -> tuple[str, tuple[int, int]]:
        """``(the chunk in words, its record)``; a chunk the manifest lacks is an error."""
        entries = self.chunks.get(array)
        what = f"chunk {_index_of(chunk) if index is None else index} of array {array!r} (chunk key {chunk!r})"
        if entries is None or chunk not in entries:
            raise FormatError(f"{what} is not in the store's manifest: the array was changed or "
                              "the chunk comes from elsewhere", file=file)
        return what, entries[chunk]

    def recorded_size(self, key: str) -> int | None:
        """The size recorded for file ``key`` (metadata or chunk), or ``None`` when it has no record."""
        if key in self.meta:
            return self.meta[key][0]
        array, chunk = split_key(key)
        entry = self.chunks.get(array, {}).get(chunk)
        return None if entry is None else entry[0]

    def check_size(self, key: str, size: int, *, file: str) -> None:
        """Raise :class:`FormatError` unless ``size`` bytes is the size recorded for ``key``.

        Called before the file is read: a file that cannot be the recorded one (a
        sparse file of gigabytes, a chunk moved here from elsewhere) is never read.
        ``file`` is the store, named in errors with ``key``.
        """
        want = self._meta_entry(key, file=file)
        if want is None:
            array, chunk = split_key(key)
            self.check_chunk_size(array, chunk, size, file=f"{file}/{key}")
        elif size != want[0]:
            raise FormatError(f"metadata file {key!r} was changed or damaged after the store was "
                              f"written ({size:,} bytes, the manifest records {want[0]:,}); it was "
                              "not read", file=f"{file}/{key}")

    def check_chunk_size(self, array: str, chunk: str, size: int, *, file: str,
                         index: int | None = None) -> None:
        """Raise :class:`FormatError` unless ``size`` bytes is the size recorded for ``chunk`` of
        ``array`` (before reading it; ``file`` names the chunk file in errors)."""
        what, (recorded, _) = self._chunk_entry(array, chunk, file=file, index=index)
        if size != recorded:
            raise FormatError(f"{what} is {size:,} bytes on disk where the manifest records "
                              f"{recorded:,}: it holds another chunk's bytes or other bytes (a chunk "
                              "moved, swapped or copied here from another position, array or store, "
                              "or a file replaced, grown or truncated); it was not read", file=file)

    def check(self, key: str, data: Any, *, file: str) -> None:
        """Raise :class:`FormatError` unless ``data`` (bytes-like) is the file recorded at ``key``.

        ``file`` is the store, named in errors with ``key``.
        """
        import numpy as np

        view = np.frombuffer(data, dtype=np.uint8)
        want = self._meta_entry(key, file=file)
        if want is not None:
            if (len(view), crc32c(view)) != want:
                raise FormatError(f"metadata file {key!r} was changed or damaged after the store "
                                  f"was written ({len(view)} bytes, recorded {want[0]}; its digest "
                                  "does not match the manifest)", file=f"{file}/{key}")
            return
        array, chunk = split_key(key)
        self.check_chunk(array, chunk, view, file=f"{file}/{key}")

    def check_chunk(self, array: str, chunk: str, raw: Any, *, file: str, index: int | None = None,
                    verified: bool = False) -> None:
        """Raise :class:`FormatError` unless ``raw`` is the chunk recorded at ``chunk`` of ``array``.

        ``verified`` says that the bytes passed their ``crc32c`` codec already; else a
        mismatch on a trailer-recorded chunk is first checked for damage.
        """
        import numpy as np

        what, (size, digest) = self._chunk_entry(array, chunk, file=file, index=index)
        view = np.frombuffer(raw, dtype=np.uint8)
        trailer = array in self.trailer
        if trailer:
            got = int.from_bytes(view[-4:].tobytes(), "little") if len(view) >= 4 else -1
        else:
            got = crc32c(view)
        if (len(view), got) == (size, digest):
            return
        if trailer and not verified and len(view) >= 4 and crc32c(view[:-4]) != got:
            raise FormatError(f"{what} fails its CRC-32C checksum: the chunk file is damaged",
                              file=file)
        raise FormatError(f"{what} holds another chunk's bytes ({len(view)} bytes, digest "
                          f"{got:#010x}; the manifest records {size} bytes, {digest:#010x}): "
                          "a chunk was moved, swapped or copied here from another position, "
                          "array or store", file=file)


def _index_of(chunk: str) -> str:
    parts = chunk[2:].split("/") if chunk.startswith("c/") else chunk.split(".")
    return parts[0]
