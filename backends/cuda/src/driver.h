// SPDX-License-Identifier: BSD-3-Clause
// driver.h - the CUDA driver, loaded at run time (backend_cuda links nothing
// from CUDA: no cudart, no libcuda, no nvcuda import).
//
// Where it is looked for (never beside a model, never in the working folder):
//   Linux    dlopen("libcuda.so.1"): the loader's usual search, which for this
//            library includes its RUNPATH ($ORIGIN, the package's lib/; so
//            pteron-verify refuses a package that holds a libcuda.so*), then
//            LD_LIBRARY_PATH, ld.so.cache and the default folders;
//   Windows  LoadLibraryExW(L"nvcuda.dll", NULL, LOAD_LIBRARY_SEARCH_SYSTEM32):
//            only the system folder, where the NVIDIA driver installs it.
// One symbol is looked up by name, cuGetProcAddress_v2 (CUDA 12.0 and newer).
// Every other entry point comes from it, for the explicit API version
// kDriverApiVersion, so a newer driver gives the ABI this code was written for.
// Types and PFN_* signatures: cuda.h and cudaTypedefs.h of the train's pinned
// nvidia-cuda-runtime wheel (cmake/cuda_trains.json).
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <string>

namespace pteron {
namespace cuda {

// The CUDA version the entry points are resolved for, and the oldest driver
// accepted: 13.0 (NVIDIA driver 580 or newer). Every 13.x train's SASS runs on
// any 13.x driver (minor-version compatibility); only a PTX JIT needs a driver
// at least as new as the train.
constexpr int kDriverApiVersion = 13000;

// The driver entry points the delegate calls, each resolved through
// cuGetProcAddress_v2(name, kDriverApiVersion, CU_GET_PROC_ADDRESS_DEFAULT).
struct DriverApi {
  PFN_cuInit_v2000 Init = nullptr;
  PFN_cuDriverGetVersion_v2020 DriverGetVersion = nullptr;
  PFN_cuDeviceGetCount_v2000 DeviceGetCount = nullptr;
  PFN_cuDeviceGet_v2000 DeviceGet = nullptr;
  PFN_cuDeviceGetName_v2000 DeviceGetName = nullptr;
  PFN_cuDeviceGetAttribute_v2000 DeviceGetAttribute = nullptr;
  PFN_cuGetErrorName_v6000 GetErrorName = nullptr;
  PFN_cuDevicePrimaryCtxRetain_v7000 DevicePrimaryCtxRetain = nullptr;
  PFN_cuDevicePrimaryCtxRelease_v11000 DevicePrimaryCtxRelease = nullptr;
  PFN_cuCtxPushCurrent_v4000 CtxPushCurrent = nullptr;
  PFN_cuCtxPopCurrent_v4000 CtxPopCurrent = nullptr;
  PFN_cuModuleLoadData_v2000 ModuleLoadData = nullptr;
  PFN_cuModuleUnload_v2000 ModuleUnload = nullptr;
  PFN_cuModuleGetFunction_v2000 ModuleGetFunction = nullptr;
  PFN_cuMemAlloc_v3020 MemAlloc = nullptr;
  PFN_cuMemFree_v3020 MemFree = nullptr;
  PFN_cuMemcpyHtoDAsync_v3020 MemcpyHtoDAsync = nullptr;
  PFN_cuMemcpyDtoHAsync_v3020 MemcpyDtoHAsync = nullptr;
  PFN_cuStreamCreate_v2000 StreamCreate = nullptr;
  PFN_cuStreamDestroy_v4000 StreamDestroy = nullptr;
  PFN_cuStreamSynchronize_v2000 StreamSynchronize = nullptr;
  PFN_cuLaunchKernel_v4000 LaunchKernel = nullptr;
};

// What loading the driver found. Filled once per process (driver()).
struct DriverState {
  int32_t code = 0;      // pteron_error: 0 = usable, else why not (below)
  std::string message;   // for code != 0: what is wrong and what to do
  std::string library;   // the library loaded: "libcuda.so.1" or "nvcuda.dll"
  int version = 0;       // cuDriverGetVersion, e.g. 13000 for CUDA 13.0 (0: not read)
  int devices = 0;       // cuDeviceGetCount
  DriverApi api;
};

// Loads the driver, resolves the entry points, calls cuInit(0) and counts the
// devices, once per process (thread-safe; later calls return the same state).
// Codes, each with a message that names the cause and the remedy:
//  - PTERON_ERROR_MISSING_DELEGATE: no driver library (the loader's own error
//    text is included); a stub driver (cuInit returned 34,
//    CUDA_ERROR_STUB_LIBRARY: the toolkit's link stub, not a driver); no device
//    (cuInit 100, or a device count of 0; CUDA_VISIBLE_DEVICES is named when it
//    is set, "" and "-1" hide every device); a driver older than CUDA 13.0
//    (both versions named), or one without cuGetProcAddress_v2 (before 12.0);
//  - PTERON_ERROR_DELEGATE_FAILED: any other cuInit failure, or an entry point
//    the driver does not resolve (its name and the CUresult).
const DriverState& driver();

// "CUDA_ERROR_NO_DEVICE (100)", through cuGetErrorName where the driver is loaded.
std::string result_name(CUresult r);

// "13.4" for a CUDA version as cuDriverGetVersion gives it (13040).
std::string cuda_version_string(int version);

}  // namespace cuda
}  // namespace pteron
