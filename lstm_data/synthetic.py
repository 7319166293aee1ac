"""``lstm_data.synthetic``: the public path of :mod:`lstm_data.data.synthetic` (seeded sample data)."""
from lstm_data.data.synthetic import (
                                      PNG2D_VARS,
                                      PNG3D_VARS,
                                      SLICE_VARS,
                                      TARGET_VARS,
                                      make_dataset,
                                      open_text_for_write,
                                      write_csv,
)

__all__ = ["SLICE_VARS", "TARGET_VARS", "PNG3D_VARS", "PNG2D_VARS", "make_dataset", "write_csv",
           "open_text_for_write"]
