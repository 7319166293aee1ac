"""L5Kit zarr v2 datasets."""
