"""Read-only attributes whose value is read off an object the instance holds.

``dataset: Forward[Batches, Dataset] = Forward(lambda b: b.pipeline.dataset, "The data.")``
in a class body is the property ``return self.pipeline.dataset`` with that docstring,
written on one line: type checkers check the reader against the declared type and see
a ``Dataset`` on instances (the ``Forward`` itself on the class); ``help()`` and
numpydoc read the docstring, and the site's docstring extension
(``docs/_griffe/sphinx_roles.py``) shows the attribute as a property of that type (it
reads the source: the docstring is the last argument, a string literal, and the type the
last of the annotation's).
"""
from __future__ import annotations

from typing import Callable, Generic, Never, TypeVar, overload

__all__ = ["Forward"]

O = TypeVar("O")
T = TypeVar("T")


class Forward(Generic[O, T]):
    """A read-only attribute: ``read(instance)``, documented by ``doc``.

    Parameters
    ----------
    read
        The value of an instance (``lambda b: b.pipeline.dataset``).
    doc
        The attribute's docstring.
    """

    def __init__(self, read: Callable[[O], T], doc: str) -> None:
        self._read = read
        self.__doc__ = doc
        self.__name__ = "attribute"

    def __set_name__(self, owner: type, name: str) -> None:
        self.__name__ = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> Forward[O, T]: ...

    @overload
    def __get__(self, instance: O, owner: type | None = None) -> T: ...

    def __get__(self, instance: O | None, owner: type | None = None) -> T | Forward[O, T]:
        if instance is None:
            return self
        return self._read(instance)

    def __set__(self, instance: O, value: Never) -> None:
        raise AttributeError(f"{type(instance).__name__}.{self.__name__} is read-only")
