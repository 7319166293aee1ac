"""Type stub of the compiled ``CsvBlockParser`` (twin: ``lstm_data/kernels/_py/csvblock.py``)."""


from lstm_data.kernels._ext.csvcolumns import CsvColumns

class CsvBlockParser(CsvColumns):
    """CSV blocks straight into columnar buffers."""

    def feed(self, data: bytes | bytearray | memoryview, final: bool = False) -> int: ...
