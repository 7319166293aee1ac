"""Build script: compiles the Cython core in ``lstm_data/kernels/_ext``.

Environment switches
--------------------
LSTM_DATA_REQUIRE_EXTENSION=1
    A failed compile is fatal (CI sets this). Otherwise a failed compile prints a
    warning and the package installs with its pure-Python twins.
LSTM_DATA_DEBUG=1
    Build with bounds checks and wraparound on, assertions kept, ``-O0 -g``.
"""
import os
import sys
import warnings
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).parent
REQUIRE = os.environ.get("LSTM_DATA_REQUIRE_EXTENSION", "") not in ("", "0")
DEBUG = os.environ.get("LSTM_DATA_DEBUG", "") not in ("", "0")


def _extensions():
    try:
        import numpy
        from Cython.Build import cythonize
        from setuptools import Extension
    except ImportError as exc:  # pragma: no cover - depends on the build machine
        if REQUIRE:
            raise
        warnings.warn(f"lstm_data: cannot compile the core ({exc}); using the pure-Python twins")
        return []
    directives = {
        "language_level": 3,
        "boundscheck": DEBUG,
        "wraparound": DEBUG,
        "initializedcheck": DEBUG,
        "cdivision": not DEBUG,
        "embedsignature": True,
    }
    if sys.platform == "win32":
        cflags = ["/O2"] if not DEBUG else ["/Od", "/Zi"]
    else:
        cflags = ["-O0", "-g"] if DEBUG else ["-O3"]
    macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
    if not DEBUG:
        macros.append(("CYTHON_WITHOUT_ASSERTIONS", None))
    exts = [
        Extension(
            f"lstm_data.kernels._ext.{pyx.stem}",
            [str(pyx.relative_to(HERE))],
            include_dirs=[numpy.get_include(), "lstm_data/kernels/_ext"],
            define_macros=macros,
            extra_compile_args=cflags,
        )
        for pyx in sorted((HERE / "lstm_data" / "kernels" / "_ext").glob("*.pyx"))
    ]
    try:
        return cythonize(exts, compiler_directives=directives, quiet=True, force=_mode_changed())
    except Exception as exc:  # noqa: BLE001 - a Cython error must not break a plain install
        if REQUIRE:
            raise
        warnings.warn(f"lstm_data: cythonizing the core failed ({exc}); using the pure-Python twins")
        return []


def _mode_changed() -> bool:
    """True when the last build used the other mode (debug/release): regenerate the C files."""
    stamp = HERE / "build" / "lstm_data_build_mode"
    mode = "debug" if DEBUG else "release"
    previous = stamp.read_text() if stamp.exists() else None
    stamp.parent.mkdir(exist_ok=True)
    stamp.write_text(mode)
    return previous != mode and (previous is not None or DEBUG)


class OptionalBuildExt(build_ext):
    """Build the extensions, but fall back to pure Python when the compiler fails."""

    def run(self):
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001 - any compiler failure
            self._fail(exc)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    def _fail(self, exc):
        if REQUIRE:
            raise exc
        msg = (
            f"\n*** lstm_data: compiling the Cython core failed ({exc}).\n"
            "*** The package is installed with its pure-Python twins, which are much slower.\n"
            "*** Set LSTM_DATA_REQUIRE_EXTENSION=1 to make this fatal.\n"
        )
        warnings.warn(msg)
        sys.stderr.write(msg)


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
