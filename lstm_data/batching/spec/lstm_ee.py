"""The keys of lstm_ee's training ``Config`` that :meth:`BatchSpec.from_lstm_ee` knows.

lstm_ee's ``Config`` (``lstm_ee/args/config.py``) holds the batch layout (the
``vars_*`` lists, ``max_prongs``) next to training options. ``from_lstm_ee`` reads
the former, accepts the latter, and refuses anything else, so a typo such as
``max_prong`` is an error instead of a silently different batch.
"""
from __future__ import annotations

import difflib
import warnings
from typing import Any, Mapping

from lstm_data.errors import SchemaError

__all__ = ["LSTM_EE_SPEC_KEYS", "LSTM_EE_OTHER_KEYS", "check_lstm_ee_keys"]

#: The keys :meth:`BatchSpec.from_lstm_ee` reads.
LSTM_EE_SPEC_KEYS = ("vars_input_slice", "vars_input_png3d", "vars_input_png2d", "var_target_total",
                     "var_target_primary", "max_prongs")
#: The other keys of lstm_ee's ``Config`` (training options, not batch layout).
LSTM_EE_OTHER_KEYS = ("batch_size", "dataset", "early_stop", "epochs", "loss", "model", "noise", "optimizer",
                      "prong_sorters", "regularizer", "schedule", "seed", "steps_per_epoch", "test_size",
                      "weights")


def check_lstm_ee_keys(config: Any) -> None:
    """Refuse unknown keys of an lstm_ee config; warn about options that change batches.

    Raises
    ------
    SchemaError
        A key of no lstm_ee ``Config`` (names the closest known key and lists them).
    """
    if isinstance(config, Mapping):
        keys = list(config)
    elif hasattr(config, "__dict__"):
        keys = [k for k in vars(config) if not k.startswith("_")]
    else:  # lstm_ee's own Config has __slots__: only known names can be set
        keys = [k for k in LSTM_EE_SPEC_KEYS + LSTM_EE_OTHER_KEYS if hasattr(config, k)]
    known = LSTM_EE_SPEC_KEYS + LSTM_EE_OTHER_KEYS
    for key in keys:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise SchemaError(f"lstm_ee config: unknown key {key!r}{hint} Known keys: "
                              f"{', '.join(LSTM_EE_SPEC_KEYS)} (batch layout) and "
                              f"{', '.join(LSTM_EE_OTHER_KEYS)} (training options, ignored)")
    for key, instead in (("noise", "declare it in the spec: spec.replace(augment={variable: {'gaussian': "
                                   "sigma}}) (or 'relative'), the same noise per (seed, epoch, row) in any worker"),
                         ("prong_sorters", "use Ragged(sort_by=...) in the spec")):
        value = config.get(key) if isinstance(config, Mapping) else getattr(config, key, None)
        if value is not None:
            warnings.warn(f"lstm_ee config: {key}={value!r} is not applied by BatchSpec.from_lstm_ee; "
                          f"{instead}", stacklevel=3)
