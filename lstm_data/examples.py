"""``lstm_data.examples``: write the documentation's example files into a folder (no clone needed).

>>> import lstm_data.examples
>>> lstm_data.examples.write_examples("numu_v3", "examples")   # doctest: +SKIP
[PosixPath('examples/numu_v3.csv.xz'), PosixPath('examples/numu_v3.toml')]

The same from the shell: ``lstm-data example numu_v3 examples``. See
:mod:`lstm_data.data.examples` for what each example holds.
"""
from lstm_data.data.examples import EXAMPLES, example_files, write_examples

__all__ = ["EXAMPLES", "example_files", "write_examples"]
