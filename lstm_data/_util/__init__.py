"""Small helpers every layer may use: argument checks, a once-per-key cache, fork safety,
the never-replace-the-input rule of every writer, and byte progress reporting.

Nothing here imports another part of lstm_data (but :mod:`lstm_data.errors`).
"""
