# SPDX-License-Identifier: BSD-3-Clause
"""pteron: Python tools for the pteron runtime package.

Submodules are imported on demand (for example ``python -m pteron.verify``);
importing the package itself loads nothing.
"""
