"""Small helpers every layer may use: argument checks, a once-per-key cache, fork safety,
the never-replace-the-input rule of every writer, and byte progress reporting.

Nothing here imports another part of lstm_data (but :mod:`lstm_data.errors`).
"""
from lstm_data._util.redact import install_log_redaction

install_log_redaction()  # no record of lstm_data's loggers shows a credential
