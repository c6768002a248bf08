# SPDX-License-Identifier: BSD-3-Clause
"""ctypes binding of pteron's C API (include/pteron/pteron.h), for tests.

Loads libpteron.so (or pteron.dll) and the kernel libraries from a build
directory, so pytest drives the runtime directly with no Python module to
build first. Shapes are tuples of ints; dtypes are numpy dtypes mapped to
pteron_dtype values (the program format's ScalarType numbering).
"""
from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

import numpy as np

MAX_DIM = 16

# pteron_error
OK = 0
INVALID_ARGUMENT = 1
INVALID_PROGRAM = 2
NOT_FOUND = 3
MISSING_OPERATOR = 4
MISSING_DELEGATE = 5
UNSUPPORTED_DTYPE = 6
SHAPE_MISMATCH = 7
OUT_OF_MEMORY = 8

# pteron_value_tag
TAG_INT = 1
TAG_TENSOR = 4

_NP_TO_DTYPE = {
    np.dtype(np.uint8): 0,
    np.dtype(np.int8): 1,
    np.dtype(np.int16): 2,
    np.dtype(np.int32): 3,
    np.dtype(np.int64): 4,
    np.dtype(np.float16): 5,
    np.dtype(np.float32): 6,
    np.dtype(np.float64): 7,
    np.dtype(np.complex64): 9,
    np.dtype(np.complex128): 10,
    np.dtype(np.bool_): 11,
}
_DTYPE_TO_NP = {v: k for k, v in _NP_TO_DTYPE.items()}
# numpy has no bfloat16: a bfloat16 value is read as its uint16 bits (set_input
# takes them with dtype_code=BFLOAT16)
BFLOAT16 = 15
_DTYPE_TO_NP[BFLOAT16] = np.dtype(np.uint16)


class PteronError(Exception):
    """An error status from the runtime: .code (pteron_error) and message."""

    def __init__(self, code: int, message: str):
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message


class ValueInfo(ctypes.Structure):
    _fields_ = [
        ("tag", ctypes.c_int32),
        ("dtype", ctypes.c_int32),
        ("dim", ctypes.c_int32),
        ("dynamism", ctypes.c_int32),
        ("sizes", ctypes.c_int64 * MAX_DIM),
        ("bound", ctypes.c_int64 * MAX_DIM),
        ("dim_order", ctypes.c_uint8 * MAX_DIM),
        ("data", ctypes.c_void_p),
        ("nbytes", ctypes.c_size_t),
        ("scalar", ctypes.c_double),
    ]


class KernelInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("overload", ctypes.c_char_p),
        ("key", ctypes.c_char_p),
        ("library", ctypes.c_char_p),
        ("priority", ctypes.c_int32),
        ("selected", ctypes.c_int32),
    ]


class BackendInfo(ctypes.Structure):
    _fields_ = [
        ("id", ctypes.c_char_p),
        ("library", ctypes.c_char_p),
        ("available", ctypes.c_int32),
        ("reserved0", ctypes.c_int32),
    ]


class Buffer(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("size", ctypes.c_size_t)]


class MethodOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("reserved0", ctypes.c_uint32),
        ("planned_buffers", ctypes.POINTER(Buffer)),
        ("num_planned_buffers", ctypes.c_size_t),
        ("max_allocated_bytes", ctypes.c_uint64),
    ]


class ProfileEvent(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("run", ctypes.c_int32),
        ("name", ctypes.c_char_p),
        ("chain_index", ctypes.c_int32),
        ("instruction_id", ctypes.c_int32),
        ("delegate_debug_id", ctypes.c_int32),
        ("reserved0", ctypes.c_int32),
        ("delegate_debug_name", ctypes.c_char_p),
        ("start_ns", ctypes.c_uint64),
        ("end_ns", ctypes.c_uint64),
    ]


def _lib_name(component: str) -> str:
    base = "pteron" if component == "runtime" else f"pteron_{component}"
    if sys.platform == "win32":
        return f"{base}.dll"
    return f"lib{base}.so"


class Runtime:
    """The runtime library plus the kernel libraries loaded beside it."""

    def __init__(self, build_dir: Path, kernel_libs=("kernels_portable",)):
        self.build_dir = Path(build_dir)
        mode = getattr(os, "RTLD_GLOBAL", 0)
        self.lib = ctypes.CDLL(str(self.build_dir / _lib_name("runtime")), mode=mode)
        self.kernel_libs = [
            ctypes.CDLL(str(self.build_dir / _lib_name(k)), mode=mode) for k in kernel_libs
        ]
        L = self.lib
        vp, sz, i32 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int32
        L.pteron_status_code.restype = i32
        L.pteron_status_code.argtypes = [vp]
        L.pteron_status_message.restype = ctypes.c_char_p
        L.pteron_status_message.argtypes = [vp]
        L.pteron_status_release.argtypes = [vp]
        L.pteron_version.restype = ctypes.c_char_p
        L.pteron_abi_version.restype = ctypes.c_uint32
        for fn, args in {
            "pteron_program_load_file": [ctypes.c_char_p, ctypes.POINTER(vp)],
            "pteron_program_load_memory": [ctypes.c_char_p, sz, ctypes.POINTER(vp)],
            "pteron_program_load_file_with_data": [ctypes.c_char_p, ctypes.c_char_p,
                                                   ctypes.POINTER(vp)],
            "pteron_program_load_memory_with_data": [ctypes.c_char_p, sz, ctypes.c_char_p, sz,
                                                     ctypes.POINTER(vp)],
            "pteron_program_method_name": [vp, sz, ctypes.POINTER(ctypes.c_char_p)],
            "pteron_program_planned_buffer_sizes": [
                vp, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int64), sz, ctypes.POINTER(sz)],
            "pteron_method_load": [vp, ctypes.c_char_p, ctypes.POINTER(MethodOptions), ctypes.POINTER(vp)],
            "pteron_method_input_info": [vp, sz, ctypes.POINTER(ValueInfo)],
            "pteron_method_output_info": [vp, sz, ctypes.POINTER(ValueInfo)],
            "pteron_method_set_input": [vp, sz, i32, ctypes.POINTER(ctypes.c_int64), i32, vp, sz],
            "pteron_method_set_input_scalar": [vp, sz, ctypes.c_double],
            "pteron_method_set_input_int": [vp, sz, ctypes.c_int64],
            "pteron_method_output_int": [vp, sz, ctypes.c_void_p],
            "pteron_method_execute": [vp],
            "pteron_method_copy_output": [vp, sz, vp, sz],
            "pteron_kernel_get": [sz, ctypes.POINTER(KernelInfo)],
            "pteron_backend_get": [sz, ctypes.POINTER(BackendInfo)],
            "pteron_method_set_profiling": [vp, i32],
            "pteron_method_profile_event": [vp, sz, ctypes.POINTER(ProfileEvent)],
            "pteron_method_write_etdump": [vp, ctypes.c_char_p],
        }.items():
            f = getattr(L, fn)
            f.restype = vp
            f.argtypes = args
        L.pteron_program_release.argtypes = [vp]
        L.pteron_program_has_data_file.restype = i32
        L.pteron_program_has_data_file.argtypes = [vp]
        L.pteron_program_method_count.restype = sz
        L.pteron_program_method_count.argtypes = [vp]
        L.pteron_method_release.argtypes = [vp]
        L.pteron_method_input_count.restype = sz
        L.pteron_method_input_count.argtypes = [vp]
        L.pteron_method_output_count.restype = sz
        L.pteron_method_output_count.argtypes = [vp]
        L.pteron_method_profile_event_count.restype = sz
        L.pteron_method_profile_event_count.argtypes = [vp]
        L.pteron_method_profile_clear.argtypes = [vp]
        L.pteron_kernel_count.restype = sz
        L.pteron_backend_count.restype = sz
        L.pteron_registration_error_count.restype = sz
        L.pteron_registration_error.restype = ctypes.c_char_p
        L.pteron_registration_error.argtypes = [sz]

    def check(self, status) -> None:
        if not status:
            return
        code = self.lib.pteron_status_code(status)
        msg = self.lib.pteron_status_message(status).decode("utf-8", "replace")
        self.lib.pteron_status_release(status)
        raise PteronError(code, msg)

    def load_file(self, path) -> "Program":
        h = ctypes.c_void_p()
        self.check(self.lib.pteron_program_load_file(str(path).encode("utf-8"), ctypes.byref(h)))
        return Program(self, h)

    def load_bytes(self, data: bytes) -> "Program":
        h = ctypes.c_void_p()
        self.check(self.lib.pteron_program_load_memory(data, len(data), ctypes.byref(h)))
        return Program(self, h)

    def load_file_with_data(self, path, data_path) -> "Program":
        """pteron_program_load_file_with_data; data_path None: no data file."""
        h = ctypes.c_void_p()
        dp = None if data_path is None else str(data_path).encode("utf-8")
        self.check(self.lib.pteron_program_load_file_with_data(str(path).encode("utf-8"), dp,
                                                               ctypes.byref(h)))
        return Program(self, h)

    def load_bytes_with_data(self, data: bytes, ptd) -> "Program":
        """pteron_program_load_memory_with_data; ptd None: no data file."""
        h = ctypes.c_void_p()
        self.check(self.lib.pteron_program_load_memory_with_data(
            data, len(data), ptd, 0 if ptd is None else len(ptd), ctypes.byref(h)))
        return Program(self, h)

    def kernels(self):
        out = []
        for i in range(self.lib.pteron_kernel_count()):
            k = KernelInfo()
            self.check(self.lib.pteron_kernel_get(i, ctypes.byref(k)))
            out.append(dict(name=k.name.decode(), overload=k.overload.decode(), key=k.key.decode(),
                            library=k.library.decode(), priority=k.priority,
                            selected=bool(k.selected)))
        return out

    def backends(self):
        out = []
        for i in range(self.lib.pteron_backend_count()):
            b = BackendInfo()
            self.check(self.lib.pteron_backend_get(i, ctypes.byref(b)))
            out.append(dict(id=b.id.decode(), library=b.library.decode(), available=bool(b.available)))
        return out

    def registration_errors(self):
        return [self.lib.pteron_registration_error(i).decode()
                for i in range(self.lib.pteron_registration_error_count())]


class Program:
    def __init__(self, rt: Runtime, handle):
        self.rt, self.h = rt, handle

    def __del__(self):
        if getattr(self, "h", None):
            self.rt.lib.pteron_program_release(self.h)
            self.h = None

    @property
    def has_data_file(self) -> bool:
        return bool(self.rt.lib.pteron_program_has_data_file(self.h))

    def method_names(self):
        names = []
        for i in range(self.rt.lib.pteron_program_method_count(self.h)):
            p = ctypes.c_char_p()
            self.rt.check(self.rt.lib.pteron_program_method_name(self.h, i, ctypes.byref(p)))
            names.append(p.value.decode())
        return names

    def planned_buffer_sizes(self, method: str):
        n = ctypes.c_size_t()
        self.rt.check(self.rt.lib.pteron_program_planned_buffer_sizes(
            self.h, method.encode(), None, 0, ctypes.byref(n)))
        arr = (ctypes.c_int64 * max(n.value, 1))()
        self.rt.check(self.rt.lib.pteron_program_planned_buffer_sizes(
            self.h, method.encode(), arr, n.value, ctypes.byref(n)))
        return list(arr[: n.value])

    def load_method(self, name: str = "forward", planned=None, max_allocated_bytes=None,
                    struct_size=None) -> "Method":
        """planned: optional list of writable numpy uint8 arrays (caller-owned).
        max_allocated_bytes: the options' memory budget; struct_size: the
        options' struct_size (default: the whole struct)."""
        h = ctypes.c_void_p()
        opts = None
        keep = None
        if planned is not None or max_allocated_bytes is not None or struct_size is not None:
            planned = planned or []
            bufs = (Buffer * max(len(planned), 1))()
            for i, a in enumerate(planned):
                bufs[i].data = a.ctypes.data
                bufs[i].size = a.nbytes
            o = MethodOptions(struct_size or ctypes.sizeof(MethodOptions), 0,
                              bufs if planned else None, len(planned), max_allocated_bytes or 0)
            opts = ctypes.byref(o)
            keep = (bufs, o, planned)
        self.rt.check(self.rt.lib.pteron_method_load(self.h, name.encode(), opts, ctypes.byref(h)))
        return Method(self, h, keep)


class Method:
    def __init__(self, program: Program, handle, keep=None):
        self.program, self.rt, self.h, self._keep = program, program.rt, handle, keep

    def __del__(self):
        if getattr(self, "h", None):
            self.rt.lib.pteron_method_release(self.h)
            self.h = None

    @property
    def num_inputs(self) -> int:
        return self.rt.lib.pteron_method_input_count(self.h)

    @property
    def num_outputs(self) -> int:
        return self.rt.lib.pteron_method_output_count(self.h)

    def _info(self, fn, i):
        v = ValueInfo()
        self.rt.check(fn(self.h, i, ctypes.byref(v)))
        return v

    def input_info(self, i):
        v = self._info(self.rt.lib.pteron_method_input_info, i)
        return dict(tag=v.tag, dtype=_DTYPE_TO_NP.get(v.dtype), sizes=tuple(v.sizes[: v.dim]),
                    bound=tuple(v.bound[: v.dim]), dynamism=v.dynamism)

    def output_info(self, i):
        v = self._info(self.rt.lib.pteron_method_output_info, i)
        return dict(tag=v.tag, dtype=_DTYPE_TO_NP.get(v.dtype), sizes=tuple(v.sizes[: v.dim]),
                    bound=tuple(v.bound[: v.dim]), dynamism=v.dynamism, nbytes=v.nbytes,
                    scalar=v.scalar)

    def set_input(self, i: int, array: np.ndarray, dtype_code: int | None = None) -> None:
        a = np.asarray(array, order="C")  # keeps a 0-dim array 0-dim
        code = _NP_TO_DTYPE[a.dtype] if dtype_code is None else dtype_code
        sizes = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
        self.rt.check(self.rt.lib.pteron_method_set_input(
            self.h, i, code, sizes, a.ndim, a.ctypes.data, a.nbytes))

    def set_input_scalar(self, i: int, value: float) -> None:
        self.rt.check(self.rt.lib.pteron_method_set_input_scalar(self.h, i, value))

    def output_int(self, i: int) -> int:
        v = ctypes.c_int64()
        self.rt.check(self.rt.lib.pteron_method_output_int(self.h, i, ctypes.byref(v)))
        return v.value

    def set_input_int(self, i: int, value: int) -> None:
        self.rt.check(self.rt.lib.pteron_method_set_input_int(self.h, i, value))

    def execute(self) -> None:
        self.rt.check(self.rt.lib.pteron_method_execute(self.h))

    def set_profiling(self, on: bool) -> None:
        self.rt.check(self.rt.lib.pteron_method_set_profiling(self.h, int(on)))

    def profile_events(self):
        """Every recorded event as a dict (pteron_method_profile_event)."""
        out = []
        for i in range(self.rt.lib.pteron_method_profile_event_count(self.h)):
            e = ProfileEvent()
            e.struct_size = ctypes.sizeof(ProfileEvent)
            self.rt.check(self.rt.lib.pteron_method_profile_event(self.h, i, ctypes.byref(e)))
            out.append(dict(run=e.run, name=e.name and e.name.decode(), chain=e.chain_index,
                            instruction=e.instruction_id, debug_id=e.delegate_debug_id,
                            debug_name=e.delegate_debug_name and e.delegate_debug_name.decode(),
                            start=e.start_ns, end=e.end_ns))
        return out

    def profile_clear(self) -> None:
        self.rt.lib.pteron_method_profile_clear(self.h)

    def write_etdump(self, path) -> None:
        self.rt.check(self.rt.lib.pteron_method_write_etdump(self.h, str(path).encode("utf-8")))

    def output(self, i: int) -> np.ndarray:
        info = self.output_info(i)
        if info["tag"] == TAG_INT:
            return np.array(self.output_int(i), dtype=np.int64)
        if info["tag"] != TAG_TENSOR:
            return np.array(info["scalar"])
        out = np.empty(info["sizes"], dtype=info["dtype"])
        self.rt.check(self.rt.lib.pteron_method_copy_output(self.h, i, out.ctypes.data, out.nbytes))
        return out

    def run(self, inputs):
        for i, a in enumerate(inputs):
            self.set_input(i, a)
        self.execute()
        return [self.output(i) for i in range(self.num_outputs)]
