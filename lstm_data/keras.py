"""``lstm_data.keras``: the public path of :mod:`lstm_data.adapters.keras` (needs the ``keras`` extra)."""
from lstm_data.adapters.keras import KerasBatches, keras_inputs
from lstm_data.adapters.keras_resume import KerasCheckpoint

__all__ = ["KerasBatches", "KerasCheckpoint", "keras_inputs"]
