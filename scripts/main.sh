#!/usr/bin/env bash
# scripts/main.sh - the main job: build and install pteron, then run the
# installed pteron-run on a real program (the CNN fixture exported by
# upstream ExecuTorch) and compare its output with eager PyTorch's.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$REPO"
pteron_install_apt "${_pteron_apt_packages[@]}"
pteron_install_venv

prefix="$REPO/out/install"
echo "==> building and installing pteron into $prefix"
pteron_build "$REPO/build" -DCMAKE_BUILD_TYPE=Release
cmake --install "$REPO/build" --prefix "$prefix" >/dev/null

outdir="$REPO/out/cnn"
mkdir -p "$outdir"
fx="$REPO/models/fixtures"
echo "==> $prefix/bin/pteron-run models/fixtures/cnn.pte"
"$prefix/bin/pteron-run" "$fx/cnn.pte" --input "$fx/cnn.forward.input_0.npy" \
  --output-dir "$outdir" --iterations 10
python - "$outdir/output_0.npy" "$fx/cnn.forward.expected_0.npy" <<'PY'
import sys
import numpy as np
a, e = np.load(sys.argv[1]), np.load(sys.argv[2])
ok = a.shape == e.shape and a.dtype == e.dtype and np.allclose(a, e, rtol=1e-4, atol=1e-5)
print(f"output vs eager PyTorch: shape {a.shape} dtype {a.dtype}, "
      f"max abs diff {float(np.abs(a - e).max()):.3g} -> {'MATCH' if ok else 'MISMATCH'}")
sys.exit(0 if ok else 1)
PY
echo "pteron: main job succeeded"
