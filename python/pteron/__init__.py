# SPDX-License-Identifier: BSD-3-Clause
"""pteron: run ExecuTorch programs (``.pte``) from Python.

    import numpy as np, pteron
    program = pteron.Program.load("model.pte")
    method = program.load_method("forward")
    (y,) = method(np.ones(method.inputs[0].shape, np.float32))

Importing the package loads nothing native: ``pteron.verify`` (the package
checker) works without the extension. The native extension
(``pteron._pteron``, linked against the runtime library) and the component
libraries (kernels, thread pool, delegates) load on the first use of the
runtime API, by absolute path from the folder of the runtime library the
extension links: the wheel's own library folder or a conda prefix's ``lib/``
(``Library/bin`` on Windows, registered with ``os.add_dll_directory`` first).
``pteron.load_components([...])`` or ``Program.load(..., components=[...])`` as
the first runtime call loads a chosen set instead of all installed ones; later,
they load the named components not loaded yet.

The runtime API (see ``pteron._runtime`` for each one's documentation):
``Program``, ``Method``, ``TensorSpec``, ``ProfileEvent``, ``operators()``, ``backends()``,
``components()``, ``load_components()``, ``set_num_threads()``,
``num_threads()``, ``version()``, and the error classes: ``Error`` and one
subclass per runtime error code. ``__version__`` is the package's version (the
repository's VERSION file).
"""
from typing import TYPE_CHECKING, List

from ._version import __version__

if TYPE_CHECKING:  # what mypy and IDEs see; at run time __getattr__ imports them on first use
    from ._runtime import (  # noqa: F401
        AbiMismatchError, DelegateFailedError, Error, FileAccessError, InternalError,
        InvalidArgumentError, InvalidProgramError, KernelFailedError, Method, MissingDelegateError,
        MissingOperatorError, NotFoundError, NotSupportedError, OutOfMemoryError, ProfileEvent,
        Program, ShapeMismatchError, TensorSpec, UnsupportedDtypeError, backends, components,
        load_components, num_threads, operators, set_num_threads, version)

_RUNTIME_NAMES = {
    "Program", "Method", "TensorSpec", "ProfileEvent", "operators", "backends", "components",
    "load_components", "set_num_threads", "num_threads", "version", "Error",
    "InvalidArgumentError", "InvalidProgramError", "NotFoundError",
    "MissingOperatorError", "MissingDelegateError", "UnsupportedDtypeError",
    "ShapeMismatchError", "OutOfMemoryError", "FileAccessError", "InternalError",
    "AbiMismatchError", "NotSupportedError", "KernelFailedError", "DelegateFailedError",
}

__all__ = sorted(_RUNTIME_NAMES | {"__version__"})


def __getattr__(name: str) -> object:
    if name in _RUNTIME_NAMES:
        from . import _runtime
        return getattr(_runtime, name)
    raise AttributeError(f"module 'pteron' has no attribute {name!r}")


def __dir__() -> List[str]:
    return sorted(set(globals()) | _RUNTIME_NAMES)
