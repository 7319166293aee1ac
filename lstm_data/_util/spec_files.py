"""Spec and option files (TOML, YAML) read within bounds.

A spec file is data a user may download. Before it is parsed its size is bounded
(:data:`MAX_SPEC_FILE_BYTES`: spec files are a few kilobytes); a parser that
recurses past Python's limit on deeply nested text is an error naming the file,
not a ``RecursionError``; and what is read may nest at most
:data:`MAX_SPEC_NESTING` tables and lists deep (a spec nests five).

YAML aliases repeat what their anchor holds: a file of a kilobyte can stand for
gigabytes once a reader walks or joins it. While a YAML file is composed, what it
expands to is counted (each node one, each scalar its length, each alias all that
its anchor expands to) and a file past :data:`MAX_SPEC_EXPANDED` is an error naming
the file, the line of the alias and the size, before anything is built from it; an
alias inside its own anchor (a document that contains itself) is an error too.
A plain YAML document (within these bounds, its aliases after their anchors) is
read by libyaml when PyYAML has it, the same values about ten times faster; any
other is read by the counting loader, as above.
"""
from __future__ import annotations

import functools
import os
import sys
from typing import Any, Callable

__all__ = ["MAX_SPEC_FILE_BYTES", "MAX_SPEC_NESTING", "MAX_SPEC_EXPANDED", "read_spec_text", "load_toml",
           "load_yaml", "check_nesting"]

#: bytes of one spec or option file read at most (a spec of thousands of variables takes tens of kilobytes)
MAX_SPEC_FILE_BYTES = 1 << 20
#: tables and lists nested in one spec or option file at most
MAX_SPEC_NESTING = 32
#: nodes and scalar characters one YAML spec or option file expands to at most, its aliases
#: expanded (a file without aliases expands to about its own size)
MAX_SPEC_EXPANDED = 8 * MAX_SPEC_FILE_BYTES

#: makes the error a reader raises from its message (the reader's own error class, located at the file)
Error = Callable[[str], Exception]


def read_spec_text(path: str | os.PathLike[str], error: Error) -> str:
    """The text of ``path``, read only when it has at most :data:`MAX_SPEC_FILE_BYTES` bytes.

    Raises
    ------
    Exception
        ``error(message)``: the file is larger, or is not UTF-8 text.
    """
    with open(path, "rb") as fh:
        data = fh.read(MAX_SPEC_FILE_BYTES + 1)
    if len(data) > MAX_SPEC_FILE_BYTES:
        raise error(f"{os.fspath(path)}: larger than {MAX_SPEC_FILE_BYTES} bytes, the most a spec or option "
                    "file is read (lstm_data._util.spec_files.MAX_SPEC_FILE_BYTES)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{os.fspath(path)}: not UTF-8 text (byte {exc.start})") from None


def load_toml(path: str | os.PathLike[str], error: Error) -> dict[str, Any]:
    """The tables of the TOML file ``path``, read within the bounds of this module.

    Raises
    ------
    Exception
        ``error(message)``: too large, not valid TOML, or nested too deep.
    """
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python < 3.11
        import tomli as tomllib

    data: dict[str, Any] = _parse(path, error, tomllib.loads, tomllib.TOMLDecodeError, "TOML")
    return data


def load_yaml(path: str | os.PathLike[str], yaml: Any, error: Error) -> Any:
    """The document of the YAML file ``path`` (``yaml``: the PyYAML module), read within bounds.

    Raises
    ------
    Exception
        ``error(message)``: too large, not valid YAML, or nested too deep.
    """
    loader = _bounded_loader(yaml)

    def parse(text: str) -> Any:
        fast = _fast_load(text, yaml)
        if fast is not _SLOW:
            return fast
        try:
            return yaml.load(text, Loader=loader)
        except _Expanded as exc:
            raise error(f"{os.fspath(path)}: {exc} (lstm_data._util.spec_files.MAX_SPEC_EXPANDED)") from None

    return _parse(path, error, parse, yaml.YAMLError, "YAML")


#: what :func:`_fast_load` gives for a document it leaves to PyYAML's own (bounded) loader
_SLOW = object()


def _fast_load(text: str, yaml: Any) -> Any:
    """The document of ``text`` through libyaml, when PyYAML has it and the document is plain.

    Plain: one document that libyaml parses, nesting at most :data:`MAX_SPEC_NESTING`
    collections, whose aliases each name an anchor complete before them, anchors defined
    once, and expanding (counted as :func:`_bounded_loader` counts) to at most
    :data:`MAX_SPEC_EXPANDED`. libyaml reads it in C, about ten times faster than
    PyYAML's Python scanner (the same resolver and constructor build the values). Any
    other document, and any error, gives :data:`_SLOW`: PyYAML's bounded loader then
    reads it and says what is wrong, as it always did.
    """
    if not getattr(yaml, "__with_libyaml__", False):
        return _SLOW
    try:
        if not _plain(yaml.parse(text, Loader=yaml.CSafeLoader), yaml):
            return _SLOW
        return yaml.load(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        return _SLOW


def _plain(events: Any, yaml: Any) -> bool:
    """Whether the YAML ``events`` are one plain document (see :func:`_fast_load`), stopping at
    the first event that is not."""
    sizes: dict[str, int] = {}  # complete anchors -> what they expand to
    stack: list[list[Any]] = []  # open collections: [anchor, what they expand to so far]
    total = documents = 0
    for event in events:
        if isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                return False
            continue
        if isinstance(event, yaml.AliasEvent):
            size = sizes.get(event.anchor)
            if size is None:  # undefined, or inside its own anchor
                return False
            total += size
        elif isinstance(event, (yaml.ScalarEvent, yaml.CollectionStartEvent)):
            anchor = event.anchor
            if anchor is not None and (anchor in sizes or any(anchor == a for a, _ in stack)):
                return False
            if isinstance(event, yaml.CollectionStartEvent):
                if len(stack) >= MAX_SPEC_NESTING:
                    return False
                stack.append([anchor, 1])
                total += 1
                continue
            size = 1 + len(event.value)
            total += size
            if anchor is not None:
                sizes[anchor] = size
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, size = stack.pop()
            if anchor is not None:
                sizes[anchor] = size
        else:  # the stream's start and end, the document's end
            continue
        if total > MAX_SPEC_EXPANDED:
            return False
        if stack:
            stack[-1][1] += size
    return documents == 1


class _Expanded(Exception):
    """A YAML document that expands past :data:`MAX_SPEC_EXPANDED`, or contains itself."""


@functools.lru_cache(maxsize=None)
def _bounded_loader(yaml: Any) -> Any:
    """PyYAML's safe loader that counts what the document expands to while composing it."""

    class BoundedLoader(yaml.SafeLoader):  # type: ignore[misc]
        """Each composed node adds its expanded size to a running total, refused past the limit."""

        def __init__(self, stream: Any) -> None:
            super().__init__(stream)
            self.expanded_sizes: dict[int, int] = {}
            self.expanded_total = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            alias = self.check_event(yaml.AliasEvent)
            line = self.peek_event().start_mark.line + 1
            node = super().compose_node(parent, index)
            if alias:
                size = self.expanded_sizes.get(id(node))
                if size is None:
                    raise _Expanded(f"the alias at line {line} is inside its own anchor: the document "
                                    "contains itself")
                self.expanded_total += size
            else:
                size = self.expanded_sizes[id(node)] = _own_size(node, self.expanded_sizes)
                self.expanded_total += 1 + (len(node.value) if isinstance(node.value, str) else 0)
            if self.expanded_total > MAX_SPEC_EXPANDED:
                raise _Expanded(f"expands to more than {MAX_SPEC_EXPANDED} nodes and characters "
                                f"(at least {self.expanded_total}, at line {line}): its aliases repeat "
                                "too much")
            return node

    return BoundedLoader


def _own_size(node: Any, sizes: dict[int, int]) -> int:
    """What a composed YAML node expands to: one, its text's length, its children's sizes."""
    if isinstance(node.value, str):
        return 1 + len(node.value)
    total = 1
    for item in node.value:
        for child in item if isinstance(item, tuple) else (item,):
            total += sizes[id(child)]
    return total


def _parse(path: str | os.PathLike[str], error: Error, parse: Callable[[str], Any],
           invalid: type[Exception], language: str) -> Any:
    """``parse`` of the text of ``path`` (:func:`read_spec_text`), its nesting checked; every
    failure ``error(message)``: ``invalid`` as not valid ``language``, a parser's recursion as
    nested too deep."""
    text = read_spec_text(path, error)
    try:
        data = parse(text)
    except invalid as exc:
        raise error(f"{os.fspath(path)}: not valid {language}: {exc}") from None
    except (RecursionError, MemoryError):
        raise error(_too_deep(path)) from None
    check_nesting(data, path, error)
    return data


def _too_deep(path: str | os.PathLike[str]) -> str:
    return (f"{os.fspath(path)}: nests tables or lists too deep to read; a spec or option file nests at "
            f"most {MAX_SPEC_NESTING} (lstm_data._util.spec_files.MAX_SPEC_NESTING)")


def check_nesting(data: Any, path: str | os.PathLike[str], error: Error) -> None:
    """Refuse ``data`` nesting more than :data:`MAX_SPEC_NESTING` tables and lists (walked
    without recursion, each shared table once: YAML aliases are not expanded)."""
    stack: list[tuple[Any, int, str]] = [(data, 0, "")]
    seen: set[int] = set()
    while stack:
        value, depth, where = stack.pop()
        if not isinstance(value, (dict, list, tuple)) or id(value) in seen:
            continue
        seen.add(id(value))
        if depth >= MAX_SPEC_NESTING:
            raise error(f"{os.fspath(path)}: {where or 'the document'} nests more than {MAX_SPEC_NESTING} "
                        "tables or lists (lstm_data._util.spec_files.MAX_SPEC_NESTING)")
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(item, (dict, list, tuple)):
                stack.append((item, depth + 1, f"{where}.{key}" if where else str(key)))
