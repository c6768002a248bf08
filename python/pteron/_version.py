# SPDX-License-Identifier: BSD-3-Clause
"""pteron.__version__: the repository's VERSION file, which CMake, the Conan recipe and the
wheel's metadata (pyproject.toml) read too; tests/test_python_package.py checks that they agree."""
__version__ = "0.1.0"
