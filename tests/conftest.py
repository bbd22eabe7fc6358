"""Shared test setup.

Matplotlib builds its font cache the first time it is imported and says so on stderr; warm it
here, once, before nbval starts any notebook kernel, so that message never reaches a
notebook's output. (``make test`` also warms it before pytest starts.) Nothing here may
change the environment the notebook kernels inherit.
"""
import matplotlib.font_manager  # noqa: F401  (importing builds the cache)

# hypothesis's files go to artifacts/hypothesis/, never a .hypothesis/ at the repository's top,
# whichever test module builds the first strategy (see _hypothesis_home)
import _hypothesis_home  # noqa: E402,F401
