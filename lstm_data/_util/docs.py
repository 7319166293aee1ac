"""One docstring, several homes: a method that implements a documented protocol member takes its text.

``@shares_doc(BatchSource.batch)`` on ``Batches.batch`` gives it the protocol's
docstring, so what a member promises is written once, where it is declared. The
site's docstring extension (``docs/_griffe/sphinx_roles.py``) reads the same decorator.
"""
from __future__ import annotations

from typing import Any, Callable, TypeVar

__all__ = ["shares_doc"]

F = TypeVar("F", bound=Callable[..., Any])


def shares_doc(source: Any) -> Callable[[F], F]:
    """A decorator giving a function the docstring of ``source`` (a function or property).

    Parameters
    ----------
    source
        The documented member whose promise the decorated function keeps.

    Returns
    -------
    callable
        The decorator; it returns the function itself, its ``__doc__`` set.
    """
    doc = source.__doc__

    def decorate(function: F) -> F:
        function.__doc__ = doc
        return function
    return decorate
