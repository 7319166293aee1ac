"""``python -m bench [options]`` from the repository root: the suite, as ``lstm-data bench``."""
import sys

from lstm_data.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
