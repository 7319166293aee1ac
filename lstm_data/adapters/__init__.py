"""Adapters to the frameworks users train with: one module per framework.

``keras`` (a ``keras.utils.PyDataset``), ``torch`` (a ``torch.utils.data.Dataset``)
and ``lstm_ee`` (drop-in replacements for lstm_ee's functions). Each imports its
framework on first use; the public paths are ``lstm_data.keras``,
``lstm_data.torch`` and ``lstm_data.compat``.
"""
