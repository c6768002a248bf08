// SPDX-License-Identifier: BSD-3-Clause
// driver.cpp - loads the CUDA driver at run time (see driver.h).
#include "driver.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "pteron/types.h"

#if defined(_WIN32)
#include <windows.h>
#else
#include <dlfcn.h>
#endif

namespace pteron {
namespace cuda {
namespace {

#if defined(_WIN32)
constexpr const char* kLibrary = "nvcuda.dll";

void* open_library(std::string* err) {
  // The system folder only: a nvcuda.dll beside the program, beside a model or
  // in the working folder is never loaded.
  HMODULE h = LoadLibraryExW(L"nvcuda.dll", nullptr, LOAD_LIBRARY_SEARCH_SYSTEM32);
  if (!h) *err = "LoadLibraryExW(nvcuda.dll, LOAD_LIBRARY_SEARCH_SYSTEM32) failed with error " +
                 std::to_string(unsigned(GetLastError()));
  return reinterpret_cast<void*>(h);
}

void* find_symbol(void* lib, const char* name) {
  return reinterpret_cast<void*>(GetProcAddress(static_cast<HMODULE>(lib), name));
}
#else
constexpr const char* kLibrary = "libcuda.so.1";

void* open_library(std::string* err) {
  // A bare name: the loader's search (driver.h); never a path relative to
  // the working folder or a model.
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    *err = e ? e : "dlopen(libcuda.so.1) failed";
  }
  return h;
}

void* find_symbol(void* lib, const char* name) { return dlsym(lib, name); }
#endif

DriverState g_state;
PFN_cuGetProcAddress_v12000 g_get_proc = nullptr;

// CUDA_VISIBLE_DEVICES, quoted, for a no-device message; empty when unset.
std::string visible_devices_note() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!v) return "";
  std::string s = std::string("; CUDA_VISIBLE_DEVICES is set to \"") + v + "\"";
  if (*v == '\0' || std::strcmp(v, "-1") == 0)
    s += ", which hides every device: unset it or name a device index";
  return s;
}

// A stub driver (the toolkit's link stub, lib/stubs/libcuda.so): `who` returned 34.
void stub(DriverState* st, const char* who) {
  st->code = PTERON_ERROR_MISSING_DELEGATE;
  st->message = std::string("the ") + kLibrary + " found is a stub (" + who +
                " returned CUDA_ERROR_STUB_LIBRARY, 34): the CUDA toolkit's link stub, not a "
                "driver. Install the NVIDIA driver, and take the stub's folder out of the "
                "library search path";
}

template <typename Fn>
bool resolve(const char* name, Fn* out, DriverState* st) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = g_get_proc(name, &p, kDriverApiVersion, CU_GET_PROC_ADDRESS_DEFAULT, &found);
  if (r == CUDA_SUCCESS && p && found == CU_GET_PROC_ADDRESS_SUCCESS) {
    *out = reinterpret_cast<Fn>(p);
    return true;
  }
  if (r == CUDA_ERROR_STUB_LIBRARY) {
    stub(st, "cuGetProcAddress_v2");
    return false;
  }
  st->code = PTERON_ERROR_DELEGATE_FAILED;
  st->message = std::string("the CUDA driver (") + kLibrary + ") does not provide " + name +
                " for CUDA " + cuda_version_string(kDriverApiVersion) + " (cuGetProcAddress_v2: " +
                result_name(r) + ", query result " + std::to_string(int(found)) +
                "): update the NVIDIA driver";
  return false;
}

void load(DriverState* st) {
  st->library = kLibrary;
  std::string err;
  void* lib = open_library(&err);
  if (!lib) {
    st->code = PTERON_ERROR_MISSING_DELEGATE;
    st->message = std::string("no CUDA driver: ") + err +
                  ". PteronCudaBackend needs an NVIDIA GPU and its driver (CUDA 13.0 or newer, "
                  "driver 580+); without one, run a program exported without "
                  "pteron.lowering.cuda.CudaPartitioner";
    return;
  }
  g_get_proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(find_symbol(lib, "cuGetProcAddress_v2"));
  if (!g_get_proc) {
    st->code = PTERON_ERROR_MISSING_DELEGATE;
    st->message = std::string("the CUDA driver ") + kLibrary +
                  " has no cuGetProcAddress_v2: it is older than CUDA 12.0, and "
                  "PteronCudaBackend needs CUDA 13.0 or newer (driver 580+): update the NVIDIA "
                  "driver";
    return;
  }
  DriverApi& a = st->api;
  if (!resolve("cuGetErrorName", &a.GetErrorName, st) || !resolve("cuInit", &a.Init, st) ||
      !resolve("cuDriverGetVersion", &a.DriverGetVersion, st))
    return;
  const CUresult init = a.Init(0);
  if (init == CUDA_ERROR_STUB_LIBRARY) {
    stub(st, "cuInit");
    return;
  }
  if (init == CUDA_ERROR_NO_DEVICE) {
    st->code = PTERON_ERROR_MISSING_DELEGATE;
    st->message = "no CUDA device (cuInit returned CUDA_ERROR_NO_DEVICE, 100)" +
                  visible_devices_note() + ". PteronCudaBackend needs an NVIDIA GPU";
    return;
  }
  if (init != CUDA_SUCCESS) {
    st->code = PTERON_ERROR_DELEGATE_FAILED;
    st->message = std::string("cuInit failed: ") + result_name(init) + " (driver " + kLibrary + ")";
    return;
  }
  int version = 0;
  const CUresult vr = a.DriverGetVersion(&version);
  st->version = version;
  if (vr != CUDA_SUCCESS || version < kDriverApiVersion) {
    st->code = PTERON_ERROR_MISSING_DELEGATE;
    st->message = "the CUDA driver supports CUDA " +
                  (vr == CUDA_SUCCESS ? cuda_version_string(version) : "(unknown: " + result_name(vr) + ")") +
                  ", and PteronCudaBackend needs CUDA " + cuda_version_string(kDriverApiVersion) +
                  " or newer (NVIDIA driver 580+): update the driver";
    return;
  }
  if (!resolve("cuDeviceGetCount", &a.DeviceGetCount, st) ||
      !resolve("cuDeviceGet", &a.DeviceGet, st) || !resolve("cuDeviceGetName", &a.DeviceGetName, st) ||
      !resolve("cuDeviceGetAttribute", &a.DeviceGetAttribute, st) ||
      !resolve("cuDevicePrimaryCtxRetain", &a.DevicePrimaryCtxRetain, st) ||
      !resolve("cuDevicePrimaryCtxRelease", &a.DevicePrimaryCtxRelease, st) ||
      !resolve("cuCtxPushCurrent", &a.CtxPushCurrent, st) ||
      !resolve("cuCtxPopCurrent", &a.CtxPopCurrent, st) ||
      !resolve("cuModuleLoadData", &a.ModuleLoadData, st) ||
      !resolve("cuModuleUnload", &a.ModuleUnload, st) ||
      !resolve("cuModuleGetFunction", &a.ModuleGetFunction, st) ||
      !resolve("cuMemAlloc", &a.MemAlloc, st) || !resolve("cuMemFree", &a.MemFree, st) ||
      !resolve("cuMemcpyHtoDAsync", &a.MemcpyHtoDAsync, st) ||
      !resolve("cuMemcpyDtoHAsync", &a.MemcpyDtoHAsync, st) ||
      !resolve("cuStreamCreate", &a.StreamCreate, st) ||
      !resolve("cuStreamDestroy", &a.StreamDestroy, st) ||
      !resolve("cuStreamSynchronize", &a.StreamSynchronize, st) ||
      !resolve("cuLaunchKernel", &a.LaunchKernel, st))
    return;
  int count = 0;
  const CUresult cr = a.DeviceGetCount(&count);
  st->devices = cr == CUDA_SUCCESS ? count : 0;
  if (cr != CUDA_SUCCESS || count <= 0) {
    st->code = PTERON_ERROR_MISSING_DELEGATE;
    st->message = "no CUDA device (cuDeviceGetCount: " +
                  (cr == CUDA_SUCCESS ? std::to_string(count) : result_name(cr)) + ")" +
                  visible_devices_note() + ". PteronCudaBackend needs an NVIDIA GPU";
    return;
  }
  // The library stays loaded for the life of the process (no dlclose): the
  // entry points above point into it.
}

}  // namespace

std::string cuda_version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

std::string result_name(CUresult r) {
  const char* name = nullptr;
  if (g_state.api.GetErrorName && g_state.api.GetErrorName(r, &name) == CUDA_SUCCESS && name)
    return std::string(name) + " (" + std::to_string(int(r)) + ")";
  return "CUresult " + std::to_string(int(r));
}

const DriverState& driver() {
  static std::once_flag once;
  std::call_once(once, [] { load(&g_state); });
  return g_state;
}

}  // namespace cuda
}  // namespace pteron
