"""HDF5 files of other writers: lstm_ee's PyTables layout, h5py and PyTables tables."""
