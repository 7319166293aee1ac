"""Type stub of the compiled ``numparse`` module: importing it creates the "C" locale of the parser."""
