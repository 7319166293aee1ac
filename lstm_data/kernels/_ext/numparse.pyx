# cython: language_level=3
"""Initialises the "C" locale used by the exact number parser in ``numparse.pxd``.

Importing this module once (``lstm_data.kernels._ext.parse`` does) creates the locale
with the GIL held, so later ``nogil`` calls never race on its creation.
"""
from .numparse cimport ld_init_locale

ld_init_locale()
