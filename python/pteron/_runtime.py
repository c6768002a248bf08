# SPDX-License-Identifier: BSD-3-Clause
"""The runtime API of the pteron package, over the native extension
``pteron._pteron`` (python/src/pteron_ext.cpp, the runtime's C API).

Nothing native loads when this module is imported; the first call that needs
the runtime loads the extension and the components (``_native()``).
"""
from __future__ import annotations

import ctypes
import importlib.util
import operator
import os
import stat
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple, Union, cast

import numpy as np

try:  # bfloat16 for numpy (optional: pip install "pteron[bfloat16]")
    import ml_dtypes as _ml_dtypes

    _BF16: Optional[np.dtype] = np.dtype(_ml_dtypes.bfloat16)
except ImportError:
    _BF16 = None

# ---- errors -----------------------------------------------------------------------------------


class Error(Exception):
    """A runtime error: ``code`` is the runtime's error code (pteron/types.h,
    ``pteron_error``), ``message`` the runtime's message (it names the program
    part, operator, input or file at fault)."""

    code = -1

    def __init__(self, message: str, code: Optional[int] = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class InvalidArgumentError(Error, ValueError):
    """A bad value from the caller (code 1)."""
    code = 1


class InvalidProgramError(Error):
    """A malformed or inconsistent ``.pte`` (code 2)."""
    code = 2


class NotFoundError(Error, LookupError):
    """No such method, input or external tensor (code 3)."""
    code = 3


class MissingOperatorError(Error):
    """The method needs operators no loaded kernel library registers (code 4);
    the message lists them all."""
    code = 4


class MissingDelegateError(Error):
    """The method needs a backend no loaded library registers (code 5)."""
    code = 5


class UnsupportedDtypeError(Error, TypeError):
    """An operator met a dtype it cannot handle (code 6)."""
    code = 6


class ShapeMismatchError(Error, ValueError):
    """A wrong shape, or a size beyond a dynamic bound (code 7)."""
    code = 7


class OutOfMemoryError(Error, MemoryError):
    """code 8"""
    code = 8


class FileAccessError(Error, OSError):
    """A file that could not be opened or mapped (code 9)."""
    code = 9


class InternalError(Error):
    """code 10"""
    code = 10


class AbiMismatchError(Error):
    """A component built for another ABI version (code 11)."""
    code = 11


class NotSupportedError(Error):
    """A valid feature this build does not have (code 12)."""
    code = 12


class KernelFailedError(Error):
    """A kernel reported a failure at execute (code 13)."""
    code = 13


class DelegateFailedError(Error):
    """A delegate reported a failure (code 14)."""
    code = 14


_ERRORS = {c.code: c for c in (
    InvalidArgumentError, InvalidProgramError, NotFoundError, MissingOperatorError,
    MissingDelegateError, UnsupportedDtypeError, ShapeMismatchError, OutOfMemoryError,
    FileAccessError, InternalError, AbiMismatchError, NotSupportedError, KernelFailedError,
    DelegateFailedError)}


def _make_error(code: int, message: str) -> Error:
    cls = _ERRORS.get(code)
    return cls(message) if cls else Error(message, code)


# ---- loading ----------------------------------------------------------------------------------

# Component names (cmake/components.json), in load order; the runtime itself is what the
# extension links.
# The loadable components, in cmake/components.json's order (the runtime aside;
# tests/test_python.py checks the two lists agree).
_COMPONENTS = ("kernels_portable", "kernels_optimized", "kernels_quantized", "kernels_llm",
               "threadpool", "backend_xnnpack", "backend_cuda", "extension_cuda")
_lock = threading.RLock()
_ext: Any = None
_libdir: Optional[Path] = None
_loaded: Dict[str, Tuple[Path, ctypes.CDLL]] = {}  # component name -> (path, library)
_dll_dirs: List[Any] = []  # Windows: os.add_dll_directory's handles


def _component_file(libdir: Path, name: str) -> Optional[Path]:
    """The component's library in the runtime's folder (Linux: the SONAME file
    libpteron_<name>.so.<MAJOR.MINOR>, else libpteron_<name>.so; Windows:
    pteron_<name>.dll), or None."""
    if sys.platform == "win32":
        p = libdir / f"pteron_{name}.dll"
        return p if p.is_file() else None
    if sys.platform == "darwin":
        cands = sorted(libdir.glob(f"libpteron_{name}.*dylib"))
        return cands[0] if cands else None
    exact = libdir / f"libpteron_{name}.so"
    versioned = sorted(libdir.glob(f"libpteron_{name}.so.*"), key=lambda p: len(p.name))
    if versioned:
        return versioned[0]  # the shortest: the SONAME link (.so.0.1), not .so.0.1.0
    return exact if exact.is_file() else None


def _windows_dll_candidates() -> List[Path]:
    """The folders that may hold pteron.dll for the extension, in order: the extension's
    folder's lib/ (a wheel) and the extension's folder itself; the same two beside this file,
    which differ from those in an editable install (its import hook loads the extension from
    the build's install folder and these files from the source tree); the Library/bin of the
    conda prefix whose Lib/site-packages holds this package, then of sys.prefix (the same,
    unless an interpreter from elsewhere imports the package)."""
    here = Path(__file__).resolve().parent
    bases = []
    try:
        spec = importlib.util.find_spec(__package__ + "._pteron")  # finds, does not load
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin and spec.origin not in ("built-in", "frozen"):
        bases.append(Path(spec.origin).resolve().parent)
    bases.append(here)
    dirs = [d for b in bases for d in (b / "lib", b)]
    if here.parent.name.lower() == "site-packages" and len(here.parents) > 2:
        dirs.append(here.parents[2] / "Library" / "bin")
    dirs.append(Path(sys.prefix) / "Library" / "bin")
    return list(dict.fromkeys(dirs))


def _windows_dll_dir() -> Path:
    """The first candidate folder that holds pteron.dll: the one folder given to
    os.add_dll_directory (Windows searches added folders in no set order). ImportError naming
    every folder looked at when none does."""
    dirs = _windows_dll_candidates()
    for d in dirs:
        if (d / "pteron.dll").is_file():
            return d
    raise ImportError("pteron: pteron.dll, the runtime library the extension pteron._pteron "
                      "links, is in none of these folders: " + ", ".join(map(str, dirs)) +
                      "; it comes with the wheel (pteron/lib) or the conda package 'libpteron' "
                      "(Library/bin)")


def _windows_loaded_path(name: str) -> Optional[Path]:
    """The file the process has loaded as DLL `name` (GetModuleHandleW, GetModuleFileNameW), or
    None when none is loaded."""
    if sys.platform != "win32":
        return None
    k32 = ctypes.WinDLL("kernel32", use_last_error=True)
    k32.GetModuleHandleW.restype = ctypes.c_void_p
    k32.GetModuleHandleW.argtypes = [ctypes.c_wchar_p]
    k32.GetModuleFileNameW.argtypes = [ctypes.c_void_p, ctypes.c_wchar_p, ctypes.c_uint32]
    h = k32.GetModuleHandleW(name)
    if not h:
        return None
    buf = ctypes.create_unicode_buffer(32768)
    n = k32.GetModuleFileNameW(h, buf, len(buf))
    return Path(buf.value) if n else None


def _windows_shadowed(d: Path) -> str:
    """"" when the pteron.dll loaded is the one in folder d; else a message naming the one that
    was: Windows searches the application's folder (python.exe's) before any folder given to
    os.add_dll_directory, so a pteron.dll there wins."""
    own = os.path.normcase(str((d / "pteron.dll").resolve()))
    loaded = _windows_loaded_path("pteron.dll")
    if loaded is None:
        # The load failed and unloaded it: the application's folder is the one place that
        # wins over the package's.
        app = Path(sys.executable).resolve().parent / "pteron.dll"
        if not app.is_file() or os.path.normcase(str(app)) == own:
            return ""
        loaded = app
    elif os.path.normcase(str(loaded.resolve())) == own:
        return ""
    return (f"pteron: the process loaded {loaded}, not the package's {d / 'pteron.dll'}: a "
            "pteron.dll in the application's folder (python.exe's), which Windows searches "
            "first, or one loaded earlier, shadows the package's; remove or rename it")


_WINDOWS_CRT_HINT = ("; pteron's DLLs also need the Visual C++ 2015-2022 runtime (vcruntime140.dll, "
                     "vcruntime140_1.dll, msvcp140.dll), which the package does not ship: install "
                     "Microsoft's Visual C++ Redistributable (x64) if msvcp140.dll is missing")


def _native(names: Optional[Sequence[str]] = None) -> Any:
    """The extension. The first call loads it, with the components `names` (None: every
    installed one); a later call with `names` loads those of them not loaded yet."""
    global _ext, _libdir
    if _ext is not None and names is None:
        return _ext
    with _lock:
        if _ext is not None:
            if names is not None:
                assert _libdir is not None
                _load_components(_libdir, names, required=True)
            return _ext
        where = ""
        d = Path()
        if sys.platform == "win32":
            # Python 3.8+ ignores PATH for an extension's DLLs: register the folder holding
            # pteron.dll first, so that one (and never another copy on PATH) loads. The
            # handle is kept for the life of the process (closing it removes the folder).
            d = _windows_dll_dir()
            _dll_dirs.append(os.add_dll_directory(str(d)))
            where = f", with pteron.dll from {d}"
        try:
            from . import _pteron as ext  # noqa: PLC0415
        except ImportError as e:
            shadow = _windows_shadowed(d) if sys.platform == "win32" else ""
            if shadow:
                raise ImportError(shadow) from e
            raise ImportError(
                f"pteron: the native extension pteron._pteron could not be loaded ({e}{where}); "
                "it comes with the wheel (pip install .) or the conda package 'pteron', and "
                "needs the runtime library (in the wheel, or the conda package "
                "'libpteron')" + (_WINDOWS_CRT_HINT if sys.platform == "win32" else "")) from e
        if sys.platform == "win32":
            shadow = _windows_shadowed(d)
            if shadow:
                raise ImportError(shadow)
        ext.set_error_factory(_make_error)
        ext.set_bfloat16_type(_BF16.num if _BF16 is not None else -1)
        runtime = ext.runtime_library_path()
        if not runtime:  # the extension's runtime library is not pteron's (no pteron_version)
            raise ImportError(f"pteron: the runtime library the extension loaded{where} does "
                              "not export pteron_version: it is not pteron's runtime library")
        # normpath: the extension's RUNPATH may hold "..", e.g. site-packages/pteron/../../..
        libdir = Path(os.path.normpath(runtime)).parent
        if names is None and _component_file(libdir, "threadpool") is None:
            # Chosen behaviour for a damaged install: fail loudly rather than run serially.
            raise ImportError(
                f"pteron: the thread pool library (component 'threadpool', "
                f"{'pteron_threadpool.dll' if sys.platform == 'win32' else 'libpteron_threadpool.so.*'}"
                f") is missing from {libdir}; reinstall pteron (pip) or libpteron (conda), or call "
                "pteron.load_components([...]) without 'threadpool' to run serially")
        _load_components(libdir, _COMPONENTS if names is None else names,
                         required=names is not None)
        _libdir = libdir
        _ext = ext
        return ext


def _load_components(libdir: Path, names: Sequence[str], required: bool) -> None:
    """Loads each of `names` not loaded yet from `libdir`, in _COMPONENTS' order (kernels
    before delegates). A missing one is skipped, or an ImportError when `required`."""
    for name in sorted(names, key=_COMPONENTS.index):
        if name in _loaded:
            continue
        path = _component_file(libdir, name)
        if path is None:
            if required:
                raise ImportError(f"pteron: component {name!r} is not installed in {libdir}")
            continue
        try:
            # Absolute path: the loader never searches for it. RTLD_GLOBAL is not needed:
            # each component registers itself with the runtime when it loads.
            _loaded[name] = (path, ctypes.CDLL(str(path)))
        except OSError as e:
            raise ImportError(f"pteron: cannot load component {name!r} from {path}: {e}") \
                from e


def _component_names(names: Iterable[str], who: str) -> Tuple[str, ...]:
    if isinstance(names, (str, bytes)):
        raise TypeError(f"{who}: give a list of component names, not a single string")
    out = tuple(names)
    bad = [n for n in out if n not in _COMPONENTS]
    if bad:
        raise ValueError(f"unknown component(s) {bad}; known: {list(_COMPONENTS)}")
    return out


def load_components(names: Iterable[str]) -> None:
    """Load these components (names of cmake/components.json, e.g.
    ``["kernels_portable", "threadpool"]``). As the first runtime call, it
    loads only these instead of every installed one; later, it loads those
    not loaded yet (``Program.load(..., components=...)`` does the same).
    The registries are the process's: a component, once loaded, serves
    every program and is never unloaded. ImportError if one is not
    installed beside the runtime library, ValueError for an unknown name."""
    _native(_component_names(names, "load_components"))


def components() -> Dict[str, str]:
    """{name: absolute path} of the runtime and every loaded component library."""
    ext = _native()
    out = {"runtime": os.path.normpath(ext.runtime_library_path())}
    out.update({n: str(p) for n, (p, _) in _loaded.items()})
    return out


def version() -> str:
    """The runtime's version, "MAJOR.MINOR.PATCH"."""
    return _native().version()


@dataclass(frozen=True)
class Operator:
    """One registered kernel: ``name`` ("aten::add"), ``overload`` ("out"),
    ``key`` ("" generic, "dtype=6" float32-specialised), ``library`` (the
    component that registered it), ``selected`` (it wins lookups)."""
    name: str
    overload: str
    key: str
    library: str
    priority: int
    selected: bool


def operators() -> List[Operator]:
    """Every registered kernel entry (winners and not)."""
    return [Operator(*k) for k in _native().kernels()]


@dataclass(frozen=True)
class Backend:
    """A registered delegate backend: ``id`` ("XnnpackBackend"), the library
    that registered it, whether it is available."""
    id: str
    library: str
    available: bool


def backends() -> List[Backend]:
    return [Backend(*b) for b in _native().backends()]


def _threadpool() -> ctypes.CDLL:
    _native()
    if "threadpool" not in _loaded:
        raise NotSupportedError("pteron: the threadpool component is not loaded")
    lib = _loaded["threadpool"][1]
    lib.pteron_threadpool_set_num_threads.argtypes = [ctypes.c_size_t]
    lib.pteron_threadpool_set_num_threads.restype = ctypes.c_int32
    lib.pteron_threadpool_num_threads.argtypes = []
    lib.pteron_threadpool_num_threads.restype = ctypes.c_size_t
    return lib


_MAX_THREADS = 1024  # PTERON_THREADPOOL_MAX_THREADS (pteron/threadpool.h)
_cap_registered = False


def _thread_cap_function() -> None:
    """Hands the threadpool library's pteron_threadpool_set_thread_cap to the extension (once);
    NotSupportedError without the threadpool component or that function."""
    global _cap_registered
    ext = _native()
    if _cap_registered:
        return
    with _lock:
        if "threadpool" not in _loaded:
            raise NotSupportedError("pteron: num_threads above 1 needs the threadpool component, "
                                    "which is not loaded")
        lib = _loaded["threadpool"][1]
        try:
            fn = lib.pteron_threadpool_set_thread_cap
        except AttributeError:
            raise NotSupportedError(
                f"pteron: the threadpool library {_loaded['threadpool'][0]} has no "
                "pteron_threadpool_set_thread_cap (an older threadpool library)") from None
        address = ctypes.cast(fn, ctypes.c_void_p).value
        ext.set_thread_cap_function(address)
        _cap_registered = True


def set_num_threads(n: int) -> None:
    """Resize the process's one thread pool to ``n`` threads (the caller
    included; 0 = the hardware threads). InvalidArgumentError above the
    pool's maximum; NotSupportedError without the threadpool component."""
    import numbers
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"set_num_threads: n must be an int, not {type(n).__name__}")
    n = int(n)
    if n < 0 or n > _MAX_THREADS:
        raise ValueError(f"set_num_threads: n must be 0 (the hardware threads) to "
                         f"{_MAX_THREADS}, not {n}")
    code = _threadpool().pteron_threadpool_set_num_threads(n)
    if code:
        raise _make_error(code, f"pteron_threadpool_set_num_threads({n}) failed")


def num_threads() -> int:
    """Threads a parallel operator may use now (1 without a thread pool)."""
    return int(_native().parallel_threads())


# ---- dtypes, specs --------------------------------------------------------------------------

# pteron_dtype (pteron/types.h, ExecuTorch's ScalarType numbering) <-> numpy.
_NP_OF = {0: np.uint8, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.int64, 5: np.float16,
          6: np.float32, 7: np.float64, 9: np.complex64, 10: np.complex128, 11: np.bool_,
          27: np.uint16, 28: np.uint32, 29: np.uint64}
_NAME_OF = {8: "complex32", 12: "qint8", 13: "quint8", 14: "qint32", 15: "bfloat16"}
_BFLOAT16 = 15
_TAG_NONE, _TAG_INT, _TAG_BOOL, _TAG_DOUBLE, _TAG_TENSOR = 0, 1, 2, 3, 4
_DYNAMISM = {0: "static", 1: "bound", 2: "unbound"}


def _dtype_of(code: int) -> Union[np.dtype, str]:
    if code in _NP_OF:
        return np.dtype(_NP_OF[code])
    if code == _BFLOAT16 and _BF16 is not None:
        return _BF16
    return _NAME_OF.get(code, f"dtype {code}")


@dataclass(frozen=True)
class TensorSpec:
    """One input or output of a method.

    ``kind``: "tensor", "int", "bool", "double" or "none"; a program may also hold "string",
    "int_list", "double_list", "bool_list", "tensor_list" or "optional_tensor_list" values,
    which a call can neither set nor return (NotSupportedError).
    For tensors: ``dtype`` (a numpy dtype: ``ml_dtypes.bfloat16``'s for
    bfloat16 when ml_dtypes is installed; else a name such as "bfloat16"
    that numpy lacks), ``shape`` (the current sizes: the exported sizes for inputs,
    the last execute's for outputs), ``bounds`` (per-dim upper bounds: equal to
    the shape when static), ``dynamism`` ("static", "bound": each size may
    shrink to any value up to its bound, "unbound"), ``dim_order`` (the
    storage order of the dims; (0, 1, ...) is contiguous row-major)."""
    kind: str
    dtype: Union[np.dtype, str, None] = None
    shape: Tuple[int, ...] = ()
    bounds: Tuple[int, ...] = ()
    dynamism: str = "static"
    dim_order: Tuple[int, ...] = ()

    @staticmethod
    def _from(info: Tuple[Any, ...]) -> "TensorSpec":
        tag, dtype, dyn, sizes, bounds, order, _nbytes, _scalar = info
        kind = {_TAG_NONE: "none", _TAG_INT: "int", _TAG_BOOL: "bool", _TAG_DOUBLE: "double",
                _TAG_TENSOR: "tensor", 5: "string", 6: "int_list", 7: "double_list",
                8: "bool_list", 9: "tensor_list", 10: "optional_tensor_list"}.get(tag, f"tag {tag}")
        if tag != _TAG_TENSOR:
            return TensorSpec(kind)
        return TensorSpec(kind, _dtype_of(dtype), tuple(sizes), tuple(bounds),
                          _DYNAMISM.get(dyn, str(dyn)), tuple(order))


# ---- program, method --------------------------------------------------------------------------


class Program:
    """A loaded, verified ``.pte`` program. Make one with ``Program.load``."""

    def __init__(self, handle: Any, source: str):
        self._h = handle
        self._source = source

    @classmethod
    def load(cls, source: Union[str, "os.PathLike[str]", bytes, bytearray, memoryview],
             data: Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, None] = None,
             *, components: Optional[Iterable[str]] = None) -> "Program":
        """Load a program from a path (str or os.PathLike), or from bytes,
        bytearray or a memoryview (copied: the caller may reuse the buffer).
        ``data``: the program's external data file (``.ptd``), a path or bytes
        likewise, or None.

        ``components``: the components the program needs (names of
        cmake/components.json, e.g. ``["kernels_portable", "backend_xnnpack"]``),
        loaded before the program if they are not yet (ImportError when one
        is not installed). None: every installed one, if no runtime call came
        before. A first call that names them loads only those; the registries
        are the process's, so a component loaded for one program also serves
        the programs loaded after it, and none is ever unloaded.

        A file is read into memory (not mapped), so rewriting or truncating it
        afterwards cannot change or break the loaded program.

        Errors: FileAccessError (a file that cannot be read, naming it),
        InvalidProgramError (malformed: the message names what),
        NotSupportedError, TypeError for another kind of source, ValueError
        for a path with a NUL character."""
        ext = _native(None if components is None
                      else _component_names(components, "Program.load: components"))
        if isinstance(source, (str, os.PathLike)):
            path = os.fspath(source)
            if data is not None and not isinstance(data, (str, os.PathLike)):
                raise TypeError("Program.load: with a path, data must be a path too")
            dbuf = _read_file(data, "data file") if data is not None else None
            pbuf = _read_file(path, "program file")
            try:
                handle = ext.ProgramHandle.load_bytes(pbuf, dbuf)
            except Error as e:  # name the files, as pteron-run does
                named = f"{e} [{path}]" + (f" [data {os.fspath(data)}]" if data is not None else "")
                raise type(e)(named, e.code) from None
            return cls(handle, path)
        buf = _as_bytes(source, "source")
        dbuf = _as_bytes(data, "data") if data is not None else None
        return cls(ext.ProgramHandle.load_bytes(buf, dbuf), "<bytes>")

    @property
    def method_names(self) -> List[str]:
        """The program's method names, in the program's order (a name that is
        not valid UTF-8 shows its bytes as backslash escapes)."""
        return [b.decode("utf-8", "backslashreplace") for b in self._h.method_names()]

    def load_method(self, name: str = "forward", *, max_allocated_bytes: int = 0,
                    num_threads: Optional[int] = None) -> "Method":
        """Load method ``name``: every operator and delegate resolved, memory
        planned.

        ``num_threads``: None (the process's thread pool, as
        ``set_num_threads`` sizes it); 1: every call of this method runs on
        the calling thread alone (its parallel operators and the delegates'
        parallel work run serially), whatever the pool's size; N > 1: at most
        N threads (the caller included) work on each parallel operator of
        this method, on the process's pool (a pool smaller than N gives what
        it has). Other methods keep the whole pool either way. N > 1 needs the
        threadpool component (NotSupportedError without it).

        ``max_allocated_bytes``: a memory budget in bytes (an int or a numpy
        integer; 0: none), the most the runtime allocates for the method's
        tensors: its planned buffers and the tensors it owns, at their
        upper-bound sizes (delegates' own memory is not counted). A program declares these sizes, and a few
        bytes can declare terabytes: set a budget when the program is not
        trusted.

        Errors: NotFoundError (no such method), MissingOperatorError (lists
        every missing operator), MissingDelegateError (names the backend),
        InvalidProgramError, OutOfMemoryError (over the budget, naming the
        buffer or value; or an allocation that failed), TypeError or
        ValueError for a bad argument."""
        if not isinstance(name, str):
            raise TypeError(f"load_method: name must be a str, not {type(name).__name__}")
        try:  # an int or any integer with __index__ (numpy's), but not a bool
            if isinstance(max_allocated_bytes, (bool, np.bool_)):
                raise TypeError
            max_allocated_bytes = operator.index(max_allocated_bytes)
        except TypeError:
            raise TypeError("load_method: max_allocated_bytes must be an int, not "
                            f"{type(max_allocated_bytes).__name__}") from None
        if not 0 <= max_allocated_bytes < 2**64:
            raise ValueError("load_method: max_allocated_bytes must be in [0, 2**64), not "
                             f"{max_allocated_bytes}")
        if num_threads is not None:
            if isinstance(num_threads, (bool, np.bool_)) or not hasattr(num_threads, "__index__"):
                raise TypeError("load_method: num_threads must be an int or None, not "
                                f"{type(num_threads).__name__}")
            num_threads = operator.index(num_threads)
            if num_threads < 1:
                raise ValueError(f"load_method: num_threads must be at least 1, not {num_threads}")
            if num_threads > _MAX_THREADS:
                raise ValueError(f"load_method: num_threads must be at most {_MAX_THREADS}, "
                                 f"not {num_threads}")
            if num_threads > 1:
                _thread_cap_function()
        if "\0" in name:
            raise ValueError(f"load_method: the name contains a NUL character: {name!r}")
        try:
            raw = name.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(f"load_method: the name is not valid UTF-8 text: {name!r}") from e
        h = self._h.load_method(raw, max_allocated_bytes)
        if num_threads == 1:
            h.set_serial(True)
        elif num_threads is not None:
            h.set_thread_cap(num_threads)
        return Method(self, name, h, num_threads)

    def __repr__(self) -> str:
        return f"<pteron.Program {self._source} methods={self.method_names}>"


def _read_file(path: Union[str, bytes, "os.PathLike[Any]"], what: str) -> np.ndarray:
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if "\0" in path:
        raise ValueError(f"Program.load: the {what} path contains a NUL character: {path!r}")
    try:
        # Only a regular file: opening a FIFO blocks and /dev/zero never ends (pteron-run's
        # rule too); a folder gets its own message below.
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            raise FileAccessError(f"cannot read {what} '{path}': it is not a regular file")
        with open(path, "rb") as f:
            return np.frombuffer(f.read(), dtype=np.uint8)
    except FileAccessError:
        raise
    except OSError as e:
        # Windows gives "Permission denied" for a folder where POSIX says EISDIR.
        if isinstance(e, IsADirectoryError) or os.path.isdir(path):
            raise FileAccessError(f"cannot open {what} '{path}': it is a directory") from None
        raise FileAccessError(f"cannot open {what} '{path}': {e.strerror or e}") from None


def _as_bytes(obj: object, what: str) -> np.ndarray:
    if isinstance(obj, np.ndarray):
        obj = memoryview(cast(Any, obj))
    if isinstance(obj, (bytes, bytearray, memoryview)):
        mv = memoryview(obj)
        if "O" in mv.format:
            raise TypeError(f"Program.load: {what} is a buffer of Python objects "
                            f"(format {mv.format!r}), not bytes")
        if not mv.c_contiguous:
            mv = memoryview(mv.tobytes())
        return np.frombuffer(mv.cast("B"), dtype=np.uint8)
    raise TypeError(f"Program.load: {what} must be a path, bytes, bytearray or memoryview, "
                    f"not {type(obj).__name__}")


class Method:
    """A loaded method. Call it with one array per input; it returns a list
    with one ``numpy.ndarray`` per tensor output (C-contiguous, a new array
    per call that owns its memory: valid after later calls; a bfloat16 output
    is an ``ml_dtypes.bfloat16`` array when ml_dtypes is installed, else
    widened to float32, exactly, as numpy has no bfloat16), a Python
    int (exact int64), bool or float per scalar output and None per None
    output. An output of another kind (a string or a list value) raises
    NotSupportedError naming it.

    ``method(*inputs, output="dlpack")`` returns each tensor output as a
    DLPack tensor instead (``__dlpack__``, ``__dlpack_device__``; bfloat16
    stays bfloat16 without ml_dtypes), and ``output="torch"`` as a
    ``torch.Tensor`` made by ``torch.from_dlpack``, which shares its memory.
    Each output is copied once out of the method's memory, because the
    method's next call overwrites that memory and a tensor handed to another
    framework cannot be told; that copy is the only one.

    Inputs: numpy arrays, anything ``numpy.asarray`` accepts, or any DLPack
    producer on the CPU (a torch tensor, bfloat16 included: read in place,
    without a copy, when it is C-contiguous and of the input's dtype); Python
    numbers for int, bool and double inputs. Views, transposes, Fortran order, structured-array fields,
    byte-swapped and read-only arrays are copied to a contiguous native
    array first. A dtype other than the input's is a TypeError naming the
    input index and both dtypes (no silent cast); a wrong rank, a static size
    that differs or a size above its bound is a ValueError naming them.

    Execution releases the GIL. Calls on one Method from several threads are
    serialised (one runs at a time); different methods run concurrently."""

    def __init__(self, program: Program, name: str, handle: Any,
                 num_threads: Optional[int] = None):
        self._program = program  # the program outlives its methods
        self.name = name
        self.num_threads = num_threads
        self._h = handle
        self._profiling = False
        self.inputs = [TensorSpec._from(handle.input_info(i)) for i in range(handle.input_count())]
        # Per input: the dtype code for the extension (-1: a number), and the static shape with
        # which a matching array is passed without a check or copy (empty: always prepared).
        handle.set_call_info(
            [_dtype_code(s.dtype) if s.kind == "tensor" and isinstance(s.dtype, np.dtype) else
             _BFLOAT16 if s.kind == "tensor" and s.dtype == "bfloat16" else -1
             for s in self.inputs],
            [list(s.shape) if s.kind == "tensor" and s.dynamism == "static" and
             isinstance(s.dtype, np.dtype) and s.shape else [] for s in self.inputs])

    @property
    def outputs(self) -> List[TensorSpec]:
        """The outputs' specs (shapes are the last execute's)."""
        return [TensorSpec._from(self._h.output_info(i)) for i in range(self._h.output_count())]

    def _prepare(self, i: int, spec: TensorSpec, x: Any) -> Any:
        if spec.kind in ("int", "bool", "double"):
            if isinstance(x, np.ndarray) and x.ndim == 0:
                x = x.item()
            if not isinstance(x, (int, float, bool, np.number, np.bool_)):
                raise TypeError(f"input {i}: expects a {spec.kind} scalar, got "
                                f"{type(x).__name__}")
            if (spec.kind == "int" and isinstance(x, (int, np.integer))
                    and not isinstance(x, (bool, np.bool_))):
                v = int(x)  # exact: the extension sets it as an int64
                if not -(1 << 63) <= v < (1 << 63):
                    raise ValueError(f"input {i}: {_short(v)} is outside the int input's int64 "
                                     "range")
                return v
            try:
                return float(x)
            except OverflowError as e:
                raise ValueError(f"input {i}: {_short(x)} is too large for a {spec.kind} input "
                                 f"({e})") from e
        if spec.kind != "tensor":
            raise TypeError(f"input {i}: a {spec.kind} input cannot be set")
        if x is None or isinstance(x, (str, bytes, dict)):
            raise TypeError(f"input {i}: expects a {spec.dtype} tensor of shape {spec.shape}, "
                            f"got {type(x).__name__}")
        if isinstance(x, (list, tuple, int, float, bool)) and isinstance(spec.dtype, np.dtype):
            # Python numbers carry no dtype: they take the input's, except that a float never
            # becomes an integer or bool silently.
            try:
                guess = np.asarray(x)
            except (TypeError, ValueError, OverflowError) as e:
                raise TypeError(f"input {i}: cannot make a tensor of {type(x).__name__} "
                                f"({e})") from e
            if guess.dtype.kind in "fc" and spec.dtype.kind in "iub":
                raise TypeError(f"input {i}: float values for a {spec.dtype} input")
            try:
                x = np.asarray(x, dtype=spec.dtype)
            except (TypeError, ValueError, OverflowError) as e:
                raise TypeError(f"input {i}: cannot make a {spec.dtype} tensor of "
                                f"{type(x).__name__} ({e})") from e
        bf16_bits = False
        if not isinstance(x, np.ndarray) and hasattr(x, "__dlpack__"):
            x, bf16_bits = _from_dlpack(i, x)
        a = np.asarray(x)
        want = spec.dtype
        if bf16_bits:  # a DLPack bfloat16 tensor's bits (uint16), without ml_dtypes
            if want != "bfloat16":
                raise TypeError(f"input {i}: dtype bfloat16 does not match the method's {want}")
            want = np.dtype(np.uint16)
        if not isinstance(want, np.dtype):
            hint = ("; install ml_dtypes (pip install ml_dtypes) to pass numpy bfloat16 arrays, "
                    "or pass a bfloat16 DLPack tensor (torch)") if want == "bfloat16" else ""
            raise TypeError(f"input {i}: the method's dtype {want} has no numpy equivalent{hint}")
        have = a.dtype.newbyteorder("=") if a.dtype.byteorder not in ("=", "|") else a.dtype
        if have.fields is not None or have != want:
            raise TypeError(f"input {i}: dtype {a.dtype} does not match the method's {want}")
        if a.ndim != len(spec.shape):
            raise ValueError(f"input {i}: shape {a.shape} has rank {a.ndim}, the method's "
                             f"{spec.shape} has rank {len(spec.shape)}")
        for d, (got, size, bound) in enumerate(zip(a.shape, spec.shape, spec.bounds)):
            if spec.dynamism == "static" and got != size:
                raise ValueError(f"input {i}: shape {a.shape} differs from the method's "
                                 f"static shape {spec.shape} in dim {d}")
            if spec.dynamism == "bound" and got > bound:
                raise ValueError(f"input {i}: dim {d} is {got}, above its bound {bound} "
                                 f"(bounds {spec.bounds})")
        return np.asarray(a, dtype=want, order="C")  # keeps 0-d arrays 0-d

    def __call__(self, *args: Any, output: str = "numpy") -> List[Any]:
        if output not in _OUTPUT_KINDS:
            raise ValueError(f"output must be one of {list(_OUTPUT_KINDS)}, not {output!r}")
        if len(args) != len(self.inputs):
            raise TypeError(f"method {self.name!r} takes {len(self.inputs)} input(s), "
                            f"{len(args)} given")
        if output != "numpy":
            out = self._h.call(args, False, True)
            if out is None:
                out = self._h.call(tuple(self._prepare_at(i, x) for i, x in enumerate(args)),
                                   True, True)
            if output == "torch":
                torch = importlib.import_module("torch")
                out = [torch.from_dlpack(o) if hasattr(o, "__dlpack__") else o for o in out]
            return out
        # The extension takes C-contiguous arrays of the inputs' dtypes and static shapes as
        # they are; anything else (a view, another layout or byte order, a dynamic shape, a
        # number) it hands back (None), and every input is prepared here for a second call.
        # The extension serialises calls on this Method.
        out = self._h.call(args, False)
        if out is None:
            out = self._h.call(tuple(self._prepare_at(i, x) for i, x in enumerate(args)), True)
        return out

    def _prepare_at(self, i: int, x: Any) -> Any:
        return self._prepare(i, self.inputs[i], x)

    # ---- profiling (pteron.h, "Profiling") -----------------------------------------------

    @property
    def profiling(self) -> bool:
        """Whether calls record their timings (off by default)."""
        return self._profiling

    @profiling.setter
    def profiling(self, on: bool) -> None:
        self._h.set_profiling(bool(on))
        self._profiling = bool(on)

    def profile(self) -> List["ProfileEvent"]:
        """The recorded events: method load's (run -1), then per profiled call its
        instructions' (``OPERATOR_CALL``, ``native_call_<operator>``, ``DELEGATE_CALL``), the
        delegate's own nodes (``name`` None, ``delegate_debug_name`` set) and
        ``Method::execute``, each with its chain and instruction index; times in nanoseconds
        of a monotonic clock."""
        return [ProfileEvent(*e) for e in self._h.profile_events()]

    def clear_profile(self) -> None:
        """Forgets the calls' events (method load's stay)."""
        self._h.clear_profile()

    def write_etdump(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the events as an ETDump file, which upstream ExecuTorch's
        ``executorch.devtools.Inspector(etdump_path=path, etrecord=...)`` reads.
        A path that cannot be written raises FileAccessError naming it."""
        self._h.write_etdump(os.fspath(path))

    def __repr__(self) -> str:
        ins = ", ".join(f"{s.dtype}{list(s.shape)}" if s.kind == "tensor" else s.kind
                        for s in self.inputs)
        return f"<pteron.Method {self.name}({ins})>"


_OUTPUT_KINDS = ("numpy", "dlpack", "torch")


class ProfileEvent(NamedTuple):
    """One timed span of a profiled method (Method.profile())."""
    run: int                            # the call's index since profiling began; -1: load
    name: Optional[str]                 # None for a delegate's own event
    chain_index: int                    # -1: not an instruction's
    instruction_id: int                 # index in the chain; -1: none
    delegate_debug_id: int              # -1: none
    delegate_debug_name: Optional[str]  # the delegate's name of the node
    start_ns: int
    end_ns: int


def _from_dlpack(i: int, x: Any) -> Tuple[np.ndarray, bool]:
    """A CPU DLPack tensor as a read-only numpy array over its memory (no copy), and whether it
    holds a bfloat16 tensor's bits (uint16: without ml_dtypes numpy cannot label them)."""
    try:
        a, bf16 = _native().dlpack_view(x, x)
    except (TypeError, RuntimeError, BufferError, ValueError) as e:
        device = ""
        try:
            device = f" on device {tuple(x.__dlpack_device__())}"
        except Exception:  # noqa: BLE001 - only for the message
            pass
        raise TypeError(f"input {i}: cannot read the DLPack tensor{device}; pteron takes CPU "
                        f"tensors ({type(e).__name__}: {e})") from e
    if bf16 and _BF16 is not None:
        return a.view(_BF16), False
    return a, bf16


def _short(x: object) -> str:
    """repr(x), cut in the middle past 40 characters (a huge int in a message)."""
    r = repr(x)
    return r if len(r) <= 40 else f"{r[:18]}...{r[-18:]} ({len(r)} characters)"


def _dtype_code(dt: np.dtype) -> int:
    for code, t in _NP_OF.items():
        if np.dtype(t) == dt:
            return code
    if _BF16 is not None and dt == _BF16:
        return _BFLOAT16
    raise TypeError(f"dtype {dt} has no pteron code")
