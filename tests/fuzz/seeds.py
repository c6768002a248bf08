# SPDX-License-Identifier: BSD-3-Clause
"""Seed corpora of the fuzz targets (tests/fuzz/README.md), from the fixtures.

    python tests/fuzz/seeds.py TARGET OUT_DIR

- program, python: every committed .pte under the fixture folders (below 1 MiB);
- xnnpack_blob / cuda_blob: each delegate blob of backend XnnpackBackend /
  PteronCudaBackend in those programs up to 128 KiB (the programs whose named
  data the blob targets read), cut out exactly: the program's
  delegate entry points at inline data or at a segment, and this reads the
  flatbuffer as runtime/core/schema/program.fbs lays it out (the extended
  header "eh00" at offset 8 gives the segment base);
- npy: every committed .npy beside them.

Writes one file per seed, named <program>.<method index>.<delegate index>.bin
for blobs, and prints how many.
"""
from __future__ import annotations

import shutil
import struct
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ["models/fixtures", "tests/cuda", "tests/xnnpack_nodes", "tests/xnnpack", "tests/state"]
BACKENDS = {"xnnpack_blob": "XnnpackBackend", "cuda_blob": "PteronCudaBackend"}
MAX_SEED = 1 << 20
# The blob targets read named data only from programs up to this size
# (kMaxNamedDataProgram in fuzz_blob.h), so their seeds come from those.
MAX_BLOB_PROGRAM = 128 * 1024


class Table:
    """A flatbuffer table at `pos` of `buf`: field i through the vtable."""

    def __init__(self, buf: bytes, pos: int):
        self.buf, self.pos = buf, pos
        vt = pos - struct.unpack_from("<i", buf, pos)[0]
        self.vt, self.vt_len = vt, struct.unpack_from("<H", buf, vt)[0]

    def _field(self, i: int) -> int:
        o = 4 + 2 * i
        return struct.unpack_from("<H", self.buf, self.vt + o)[0] if o < self.vt_len else 0

    def scalar(self, i: int, fmt: str, default=0):
        o = self._field(i)
        return struct.unpack_from("<" + fmt, self.buf, self.pos + o)[0] if o else default

    def _deref(self, i: int) -> int | None:
        o = self._field(i)
        if not o:
            return None
        p = self.pos + o
        return p + struct.unpack_from("<I", self.buf, p)[0]

    def table(self, i: int) -> "Table | None":
        p = self._deref(i)
        return Table(self.buf, p) if p is not None else None

    def string(self, i: int) -> str:
        p = self._deref(i)
        if p is None:
            return ""
        n = struct.unpack_from("<I", self.buf, p)[0]
        return self.buf[p + 4:p + 4 + n].decode("utf-8", "replace")

    def bytes_(self, i: int) -> bytes:
        p = self._deref(i)
        if p is None:
            return b""
        n = struct.unpack_from("<I", self.buf, p)[0]
        return self.buf[p + 4:p + 4 + n]

    def tables(self, i: int) -> list["Table"]:
        p = self._deref(i)
        if p is None:
            return []
        n = struct.unpack_from("<I", self.buf, p)[0]
        out = []
        for k in range(n):
            e = p + 4 + 4 * k
            out.append(Table(self.buf, e + struct.unpack_from("<I", self.buf, e)[0]))
        return out


def delegate_blobs(pte: bytes, backend: str):
    """(method index, delegate index, blob bytes) for each delegate of `backend`."""
    segment_base = 0
    if pte[8:12] == b"eh00":
        segment_base = struct.unpack_from("<Q", pte, 24)[0]
    root = Table(pte, struct.unpack_from("<I", pte, 0)[0])
    inline = root.tables(3)      # Program.backend_delegate_data
    segments = root.tables(4)    # Program.segments
    for mi, plan in enumerate(root.tables(1)):  # Program.execution_plan
        for di, d in enumerate(plan.tables(7)):  # ExecutionPlan.delegates
            if d.string(0) != backend:
                continue
            ref = d.table(1)                     # BackendDelegate.processed
            loc, index = ref.scalar(0, "b"), ref.scalar(1, "I")
            if loc == 0:                         # INLINE
                blob = inline[index].bytes_(0)
            else:                                # SEGMENT
                seg = segments[index]
                off = segment_base + seg.scalar(0, "Q")
                blob = pte[off:off + seg.scalar(1, "Q")]
            yield mi, di, blob


def fixture_files(suffix: str) -> list[Path]:
    files = []
    for folder in FOLDERS:
        files += sorted((REPO / folder).glob("*" + suffix))
    return [f for f in files if f.stat().st_size <= MAX_SEED]


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in ("program", "python", "npy", *BACKENDS):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        print("TARGET: program, python, xnnpack_blob, cuda_blob or npy", file=sys.stderr)
        return 2
    target, out = argv[1], Path(argv[2])
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    if target in ("program", "python", "npy"):
        for f in fixture_files(".npy" if target == "npy" else ".pte"):
            shutil.copyfile(f, out / f"{f.parent.name}.{f.name}")
            n += 1
    else:
        for f in fixture_files(".pte"):
            if f.stat().st_size > MAX_BLOB_PROGRAM:
                continue
            for mi, di, blob in delegate_blobs(f.read_bytes(), BACKENDS[target]):
                (out / f"{f.stem}.{mi}.{di}.bin").write_bytes(blob)
                n += 1
    print(f"{target}: {n} seeds in {out}")
    return 0 if n else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
