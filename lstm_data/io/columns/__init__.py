"""The rules every reader follows: column groups, column selection, exact integers."""
