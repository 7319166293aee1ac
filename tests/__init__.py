"""lstm_data test suite: one folder per package layer (kernels, data, io, batching, store, adapters, cli, bench)."""
