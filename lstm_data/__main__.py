"""``python -m lstm_data ...`` is the same as the ``lstm-data`` command."""
from lstm_data.cli import main

raise SystemExit(main())
