"""Our layout: its zarr v3 and HDF5 readers and writers, convert, manifests and ownership."""
