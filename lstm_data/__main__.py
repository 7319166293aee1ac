"""``python -m lstm_data ...`` is the same as the ``lstm-data`` command."""
from .cli import main

raise SystemExit(main())
