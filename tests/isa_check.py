# SPDX-License-Identifier: BSD-3-Clause
"""Which functions of a disassembled library hold wide instructions: the
check that an AVX (VEX) instruction appears only in a function of an AVX2 or
AVX-512 object of pteron_cpu (namespace pteron_cpu::isa_<level> or its Eigen,
pteron_eigen_<level>) and an AVX-512 one (zmm or mask registers) only in the
AVX-512 object. Used by tests/test_optimized.py (kernels_optimized) and
tests/test_xnnpack_nhwc.py (backend_xnnpack)."""
from __future__ import annotations

import re

_HEAD = re.compile(r"^[0-9a-f]+ <(.*)>:$")


def wide_instructions(objdump_text: str):
    """objdump -d --no-show-raw-insn -C output -> (functions holding a wide
    instruction they may not, {"avx2": ymm instructions in AVX2 objects,
    "avx512": EVEX instructions in AVX-512 objects})."""
    fn, bad, seen = None, set(), {"avx2": 0, "avx512": 0}
    for line in objdump_text.splitlines():
        m = _HEAD.match(line)
        if m:
            fn = m.group(1)
            continue
        parts = line.split("\t")
        if fn is None or len(parts) < 2:
            continue
        insn = parts[1].strip()
        mnem = insn.split(" ", 1)[0]
        vex = mnem.startswith("v") and mnem not in ("verr", "verw")
        evex = "%zmm" in insn or re.search(r"%k[0-7]\b", insn) is not None or mnem.startswith("k")
        if not (vex or evex):
            continue
        in512 = "pteron_eigen_avx512" in fn or "pteron_cpu::isa_avx512" in fn
        in2 = "pteron_eigen_avx2" in fn or "pteron_cpu::isa_avx2" in fn
        if in512:
            seen["avx512"] += evex
        elif in2 and not evex:
            seen["avx2"] += "%ymm" in insn
        else:
            bad.add(fn)
    return bad, seen


def cpu_flags() -> set:
    """The CPU's feature flags (/proc/cpuinfo; empty where there is none)."""
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8", errors="replace"):
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


# The CPU flags each PTERON_ISA level needs (runtime/cpu/src/dispatch.cpp).
ISA_NEEDS = {"baseline": set(), "avx2": {"avx2", "fma"},
             "avx512": {"avx512f", "avx512bw", "avx512dq", "avx512vl"}}
# The int8 GEMM's widest level (runtime/cpu/include/pteron_cpu/qgemm.h): AVX-512 and AVX512-VNNI.
ISA_NEEDS["avx512vnni"] = ISA_NEEDS["avx512"] | {"avx512_vnni"}


def missing_for(isa: str) -> set:
    """The flags this CPU lacks for PTERON_ISA=isa (empty: it can run)."""
    return ISA_NEEDS[isa] - cpu_flags()
