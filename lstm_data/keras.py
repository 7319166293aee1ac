"""``lstm_data.keras``: the public path of :mod:`lstm_data.adapters.keras` (needs the ``keras`` extra)."""
from lstm_data.adapters.keras import KerasBatches, keras_inputs

__all__ = ["KerasBatches", "keras_inputs"]
