"""Optional dependencies: import them where needed, with an error that says how to install."""
from __future__ import annotations

import importlib


def require(module, extra, purpose):
    """Import ``module`` or raise ImportError naming the extra ``natcoord[extra]`` to install."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(
            f"{purpose} needs {module.split('.')[0]}, which is not installed; "
            f"install it with: pip install natcoord[{extra}]  "
            f"(or: pip install {module.split('.')[0]})") from err


def pyplot(purpose="plotting"):
    """``matplotlib.pyplot``, or an ImportError telling to ``pip install natcoord[plot]``."""
    return require("matplotlib.pyplot", "plot", purpose)
