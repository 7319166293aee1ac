"""The output forms of a ``Ragged`` field, one class each, registered by the name
``Ragged(layout=...)`` gives (as a spec file's ``layout = "packed"``).

Everything that depends on a field's form asks its :class:`Form` (``field.form``):
output names and shapes, mask, value axes, the kernel layout and the padded fill.
A new form is one module here with a :class:`Form` subclass and one line below
registering it (see "Where to add things" in ``docs/design.md``).
"""
from __future__ import annotations

from typing import Any

from lstm_data.batching.spec.forms.base import (
    CU_SEQLENS_SUFFIX,
    LENGTHS_SUFFIX,
    MASK_SUFFIX,
    MAX_SEQLEN_SUFFIX,
    PAD_MODES,
    Form,
    RaggedField,
    unknown_layout,
)
from lstm_data.batching.spec.forms.channels_first import ChannelsFirst
from lstm_data.batching.spec.forms.packed import Packed
from lstm_data.batching.spec.forms.padded import Padded

__all__ = ["Form", "RaggedField", "FORMS", "form_of", "register_form", "LENGTHS_SUFFIX",
           "MASK_SUFFIX", "CU_SEQLENS_SUFFIX", "MAX_SEQLEN_SUFFIX", "PAD_MODES"]

#: every registered form, by its name
FORMS: dict[str, Form] = {}


def register_form(form: Form) -> Form:
    """Make ``form`` the one ``Ragged(layout=form.name)`` asks for; returns it."""
    FORMS[form.name] = form
    return form


for _form in (Padded(), ChannelsFirst(), Packed()):
    register_form(_form)


def form_of(layout: Any, where: str = "Ragged") -> Form:
    """The form ``layout`` names.

    Raises
    ------
    SchemaError
        ``layout`` names no registered form.
    """
    form = FORMS.get(layout) if isinstance(layout, str) else None
    if form is None:
        raise unknown_layout(where, layout, tuple(FORMS))
    return form
