"""``lstm_data.compat``: the public path of :mod:`lstm_data.adapters.lstm_ee` (drop-ins for lstm_ee)."""
from lstm_data.adapters.lstm_ee import join_varr_arrays

__all__ = ["join_varr_arrays"]
