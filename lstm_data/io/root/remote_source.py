"""uproot's reads of a ROOT file at a URL, through our filesystem of the URL (imported with uproot).

:class:`CheckedSource` is uproot's fsspec source whose filesystem is the one
:func:`~lstm_data.io.plumbing.remote.remote_filesystem` gives: for http(s), the
checked filesystem with the timeouts and retries of ``ReadOptions``, which checks
every byte-range answer; uproot's coalesced reads of baskets stay as they are.
"""
from __future__ import annotations

import contextlib
from types import TracebackType
from typing import Any

import uproot.source.fsspec

from lstm_data.io.plumbing.remote import remote_filesystem
from lstm_data.io.plumbing.remote_errors import RemoteSettings

__all__ = ["CheckedSource", "SETTINGS_OPTION"]

#: the ``uproot.open`` option that carries the :class:`RemoteSettings` to the source
SETTINGS_OPTION = "lstm_data_remote"


class CheckedSource(uproot.source.fsspec.FSSpecSource):  # type: ignore[misc] # uproot is untyped
    """uproot's fsspec source, reading through our filesystem of the URL (see the module).

    Parameters
    ----------
    file_path
        The URL.
    **options
        uproot's options, and :data:`SETTINGS_OPTION` (a :class:`RemoteSettings`).
    """

    def __init__(self, file_path: str, **options: Any) -> None:
        self._settings: RemoteSettings = options.pop(SETTINGS_OPTION, None) or RemoteSettings()
        super().__init__(file_path, **options)

    def _open(self) -> None:
        self._executor = uproot.source.fsspec.FSSpecLoopExecutor()
        self._fs, self._file_path = remote_filesystem(self._file_path_orig, self._settings)
        self._open_file = contextlib.nullcontext()
        self._async_impl = self._fs.async_impl
        self._closed = False

    def __exit__(self, exception_type: type[BaseException] | None, exception_value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._executor.shutdown()  # the filesystem is shared (fsspec caches it): left open
        self._closed = True
