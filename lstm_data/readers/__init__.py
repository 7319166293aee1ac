"""File-format readers: each turns a file or store into a :class:`~lstm_data.dataset.Dataset`."""
