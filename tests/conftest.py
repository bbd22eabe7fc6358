"""Shared test setup.

Matplotlib builds its font cache the first time it is imported and says so on stderr; warm it
here, once, before nbval starts any notebook kernel, so that message never reaches a
notebook's output.
"""
import os

os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib.font_manager  # noqa: E402,F401  (importing builds the cache)
