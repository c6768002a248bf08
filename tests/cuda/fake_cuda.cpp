// SPDX-License-Identifier: BSD-3-Clause
// fake_cuda.cpp - a fake CUDA driver for backend_cuda's tests, built as
// libcuda.so.1 (Linux) or nvcuda.dll (MinGW, for Wine's system32). It exports
// cuGetProcAddress_v2 and resolves the entry points the delegate asks for.
// Its "device" is the CPU: memory is host memory, and cuLaunchKernel runs the
// launched kernel's body from backends/cuda/src/kernels.h over the launch's
// grid (backends/cuda/test/cpu_grid.h), reading the arguments from the
// kernelParams array as the driver would (backends/cuda/src/launch_abi.h). So the delegate's whole
// host path (module, memory, copies, launches, parameters) runs end to end
// on a machine without a GPU. Behaviour, from the environment:
//   PTERON_FAKE_CUINIT           cuInit's result (default 0; 34 stub, 100 no device);
//                                CUDA_VISIBLE_DEVICES "" or "-1" make it 100, as a real driver
//   PTERON_FAKE_PROC_RESULT      cuGetProcAddress_v2's result (default 0)
//   PTERON_FAKE_DRIVER_VERSION   cuDriverGetVersion (default 13000)
//   PTERON_FAKE_DEVICES          cuDeviceGetCount (default 1)
//   PTERON_FAKE_SM               the device's compute capability, e.g. 89 (default)
//   PTERON_FAKE_MODULE_RESULT    cuModuleLoadData's result (default 0; 209 no binary for
//                                the GPU, 222 PTX too new for the driver)
//   PTERON_FAKE_LOG              1: one line per launch (and per context retained) on stderr
// On load it writes "pteron-fake-cuda loaded: <PTERON_FAKE_TAG>" to stderr, so
// a test sees which copy, if any, was loaded. Plain C types at the boundary:
// CUDA handles are pointers, CUdeviceptr is a 64-bit integer, CUresult an int.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../../backends/cuda/test/cpu_grid.h"

#if defined(_WIN32)
#include <windows.h>
#define FAKE_EXPORT extern "C" __declspec(dllexport)
#else
#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))
#endif

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

void announce() {
  const char* tag = std::getenv("PTERON_FAKE_TAG");
  std::fprintf(stderr, "pteron-fake-cuda loaded: %s\n", tag ? tag : "");
}

#if defined(_WIN32)
}  // namespace
BOOL WINAPI DllMain(HINSTANCE, DWORD reason, LPVOID) {
  if (reason == DLL_PROCESS_ATTACH) announce();
  return TRUE;
}
namespace {
#else
__attribute__((constructor)) void on_load() { announce(); }
#endif

namespace grid = pteron::cuda::cpu_grid;
using pteron::cuda::KernelId;

// A function handle is a pointer to one of these (its kernel).
KernelId g_functions[pteron::cuda::kKernelCount];
int g_module;  // the one module's handle is its address
int g_context;

int fake_init(unsigned) {
  const char* vis = std::getenv("CUDA_VISIBLE_DEVICES");
  if (vis && (*vis == '\0' || std::strcmp(vis, "-1") == 0)) return 100;
  return env_int("PTERON_FAKE_CUINIT", 0);
}
int driver_get_version(int* v) { *v = env_int("PTERON_FAKE_DRIVER_VERSION", 13000); return 0; }
int device_get_count(int* n) { *n = env_int("PTERON_FAKE_DEVICES", 1); return 0; }
int device_get(int* dev, int ordinal) { *dev = ordinal; return 0; }
int device_get_name(char* name, int len, int) {
  std::snprintf(name, size_t(len), "pteron fake GPU");
  return 0;
}
int device_get_attribute(int* v, int attr, int) {
  const int sm = env_int("PTERON_FAKE_SM", 89);
  *v = attr == 75 ? sm / 10 : attr == 76 ? sm % 10 : 0;  // compute capability major, minor
  return 0;
}
int get_error_name(int r, const char** s) {
  switch (r) {
    case 34: *s = "CUDA_ERROR_STUB_LIBRARY"; return 0;
    case 100: *s = "CUDA_ERROR_NO_DEVICE"; return 0;
    case 209: *s = "CUDA_ERROR_NO_BINARY_FOR_GPU"; return 0;
    case 222: *s = "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"; return 0;
    case 999: *s = "CUDA_ERROR_UNKNOWN"; return 0;
    default: *s = nullptr; return 1;
  }
}
int primary_ctx_retain(void** ctx, int dev) {
  if (env_int("PTERON_FAKE_LOG", 0)) std::fprintf(stderr, "pteron-fake-cuda retain device %d\n", dev);
  *ctx = &g_context;
  return 0;
}
int primary_ctx_release(int) { return 0; }
int ctx_push(void* ctx) { return ctx == &g_context ? 0 : 201; }
int ctx_pop(void** ctx) { *ctx = &g_context; return 0; }
int module_load_data(void** mod, const void* image) {
  if (int r = env_int("PTERON_FAKE_MODULE_RESULT", 0)) return r;
  uint32_t magic = 0;
  std::memcpy(&magic, image, 4);
  if (magic != 0xBA55ED50u) return 200;  // CUDA_ERROR_INVALID_IMAGE: not a fatbin
  *mod = &g_module;
  return 0;
}
int module_unload(void* mod) { return mod == &g_module ? 0 : 400; }
int module_get_function(void** fn, void* mod, const char* name) {
  if (mod != &g_module) return 400;
  KernelId k;
  if (!pteron::cuda::kernel_from_function(name, &k)) return 500;  // CUDA_ERROR_NOT_FOUND
  g_functions[int(k)] = k;
  *fn = &g_functions[int(k)];
  return 0;
}
int mem_alloc(uint64_t* p, size_t bytes) {
  void* m = std::calloc(1, bytes);
  if (!m) return 2;
  *p = uint64_t(uintptr_t(m));
  return 0;
}
int mem_free(uint64_t p) { std::free(reinterpret_cast<void*>(uintptr_t(p))); return 0; }
int memcpy_htod(uint64_t dst, const void* src, size_t n, void*) {
  std::memcpy(reinterpret_cast<void*>(uintptr_t(dst)), src, n);
  return 0;
}
int memcpy_dtoh(void* dst, uint64_t src, size_t n, void*) {
  std::memcpy(dst, reinterpret_cast<const void*>(uintptr_t(src)), n);
  return 0;
}
int stream_create(void** s, unsigned) { static int stream; *s = &stream; return 0; }
int stream_destroy(void*) { return 0; }
int stream_synchronize(void*) { return 0; }

int launch_kernel(void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                  unsigned bz, unsigned shmem, void* stream, void** params, void** extra) {
  (void)shmem;
  if (!params || extra || !fn) return 1;  // CUDA_ERROR_INVALID_VALUE
  const KernelId k = *static_cast<const KernelId*>(fn);
  if (env_int("PTERON_FAKE_LOG", 0))
    std::fprintf(stderr, "pteron-fake-cuda launch %s grid=(%u,%u,%u) block=(%u,%u,%u) stream=%p\n",
                 pteron::cuda::kernel_function(k), gx, gy, gz, bx, by, bz, stream);
  const uint32_t g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
  return grid::launch(k, g, b, params) ? 0 : 1;
}

struct Entry {
  const char* name;
  void* fn;
};
const Entry kEntries[] = {
    {"cuInit", reinterpret_cast<void*>(fake_init)},
    {"cuDriverGetVersion", reinterpret_cast<void*>(driver_get_version)},
    {"cuDeviceGetCount", reinterpret_cast<void*>(device_get_count)},
    {"cuDeviceGet", reinterpret_cast<void*>(device_get)},
    {"cuDeviceGetName", reinterpret_cast<void*>(device_get_name)},
    {"cuDeviceGetAttribute", reinterpret_cast<void*>(device_get_attribute)},
    {"cuGetErrorName", reinterpret_cast<void*>(get_error_name)},
    {"cuDevicePrimaryCtxRetain", reinterpret_cast<void*>(primary_ctx_retain)},
    {"cuDevicePrimaryCtxRelease", reinterpret_cast<void*>(primary_ctx_release)},
    {"cuCtxPushCurrent", reinterpret_cast<void*>(ctx_push)},
    {"cuCtxPopCurrent", reinterpret_cast<void*>(ctx_pop)},
    {"cuModuleLoadData", reinterpret_cast<void*>(module_load_data)},
    {"cuModuleUnload", reinterpret_cast<void*>(module_unload)},
    {"cuModuleGetFunction", reinterpret_cast<void*>(module_get_function)},
    {"cuMemAlloc", reinterpret_cast<void*>(mem_alloc)},
    {"cuMemFree", reinterpret_cast<void*>(mem_free)},
    {"cuMemcpyHtoDAsync", reinterpret_cast<void*>(memcpy_htod)},
    {"cuMemcpyDtoHAsync", reinterpret_cast<void*>(memcpy_dtoh)},
    {"cuStreamCreate", reinterpret_cast<void*>(stream_create)},
    {"cuStreamDestroy", reinterpret_cast<void*>(stream_destroy)},
    {"cuStreamSynchronize", reinterpret_cast<void*>(stream_synchronize)},
    {"cuLaunchKernel", reinterpret_cast<void*>(launch_kernel)},
};

}  // namespace

// CUresult cuGetProcAddress_v2(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*)
FAKE_EXPORT int cuGetProcAddress_v2(const char* symbol, void** pfn, int, unsigned long long,
                                    int* status) {
  *pfn = nullptr;
  if (int rc = env_int("PTERON_FAKE_PROC_RESULT", 0)) {
    if (status) *status = 1;
    return rc;
  }
  for (const Entry& e : kEntries)
    if (std::strcmp(symbol, e.name) == 0) {
      *pfn = e.fn;
      if (status) *status = 0;
      return 0;
    }
  if (status) *status = 1;  // CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
  return 500;               // CUDA_ERROR_NOT_FOUND
}
