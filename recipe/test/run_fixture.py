# SPDX-License-Identifier: BSD-3-Clause
"""The conda recipe's test of the Python module: python test/run_fixture.py PREFIX FIXTURE.

Imports pteron from PREFIX's site-packages (an offline build tests with the build machine's
python, which is not PREFIX's), checks that the runtime library it loaded is PREFIX's own,
runs FIXTURE.pte's forward on FIXTURE.forward.input_0.npy and compares the output with
FIXTURE.forward.expected_0.npy (eager PyTorch's; rtol 1e-4, atol 1e-5). Exit 0 on a match.
"""
import glob
import os
import sys

prefix, fixture = sys.argv[1], sys.argv[2]
if sys.platform == "win32":  # conda's Windows layout: Lib\site-packages, DLLs in Library\bin
    site, libdir = os.path.join(prefix, "Lib", "site-packages"), os.path.join(prefix, "Library", "bin")
else:
    ver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site, libdir = os.path.join(prefix, "lib", ver, "site-packages"), os.path.join(prefix, "lib")
sys.path.insert(0, site)

import numpy as np  # noqa: E402
import pteron  # noqa: E402

libs = pteron.components()
lib = os.path.realpath(libs["runtime"])
want = os.path.realpath(libdir)
for name, path in libs.items():
    if os.path.dirname(os.path.realpath(path)) != want:
        sys.exit(f"pteron loaded {name} from {path}, not from {want}")
method = pteron.Program.load(fixture + ".pte").load_method("forward")
out = method(np.load(fixture + ".forward.input_0.npy"))[0]
expected = np.load(fixture + ".forward.expected_0.npy")
if not np.allclose(out, expected, rtol=1e-4, atol=1e-5):
    sys.exit(f"output differs from eager PyTorch's: max abs err {np.abs(out - expected).max()}")
print(f"pteron {pteron.version()} from {lib}: {os.path.basename(fixture)} matches eager PyTorch "
      f"(components: {', '.join(libs)})")
