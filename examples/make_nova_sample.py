"""Write ``examples/nova_sample.h5``: a small NOvA-style HDF5 file of tables (seeded, reproducible).

The generator is :func:`lstm_data.data.examples.nova_sample.write_nova_sample` (see its module for
the layout); ``lstm-data example nova_sample DIR`` writes the same file, byte for byte.

Run from the repository root::

    python examples/make_nova_sample.py            # writes examples/nova_sample.h5
    python examples/make_nova_sample.py other.h5
"""
from __future__ import annotations

import sys
from pathlib import Path

from lstm_data.data.examples.nova_sample import write_nova_sample

if __name__ == "__main__":
    path = write_nova_sample(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("nova_sample.h5"))
    print(f"wrote {path}: {path.stat().st_size / 1024:.0f} KiB")
