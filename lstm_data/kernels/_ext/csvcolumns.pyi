"""Type stub of the compiled ``CsvColumns``, base of ``CsvBlockParser``."""
from typing import Any, Mapping, Sequence

import numpy as np
from numpy.typing import DTypeLike

class CsvColumns:
    """Column layout and growing buffers of the compiled CSV parser."""

    def __init__(self, names: Sequence[str], kinds: Sequence[str], groups: Mapping[str, Sequence[int]], *,
                 dtype: DTypeLike = ..., sep: str = ",", list_sep: str = ",", first_line: int = 1) -> None: ...
    @property
    def rows(self) -> int: ...
    @property
    def line(self) -> int: ...
    @line.setter
    def line(self, value: int) -> None: ...
    def column_flags(self) -> np.ndarray[Any, Any]: ...
    def finish(self) -> tuple[dict[str, np.ndarray[Any, Any]],
                              dict[str, tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]]: ...
