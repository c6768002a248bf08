/* SPDX-License-Identifier: BSD-3-Clause
 * fake_cuda.c - a fake CUDA driver for the tests of backend_cuda's error paths:
 * built as libcuda.so.1 (Linux) or nvcuda.dll (MinGW, for Wine's system32).
 * It exports cuGetProcAddress_v2 and resolves the few entry points the
 * delegate's loader asks for. Behaviour, from the environment:
 *   PTERON_FAKE_CUINIT           cuInit's result (default 0; 34 = stub, 100 = no device);
 *                                CUDA_VISIBLE_DEVICES "" or "-1" make it 100, as a
 *                                real driver does
 *   PTERON_FAKE_PROC_RESULT      cuGetProcAddress_v2's result (default 0)
 *   PTERON_FAKE_DRIVER_VERSION   cuDriverGetVersion (default 13000)
 *   PTERON_FAKE_DEVICES          cuDeviceGetCount (default 1)
 * On load it writes "pteron-fake-cuda loaded: <PTERON_FAKE_TAG>" to stderr, so
 * a test sees which copy, if any, was loaded. Only plain C types cross: the
 * CUDA types are ints and pointers here (no CUDA header needed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#define EXPORT __declspec(dllexport)
#else
#define EXPORT __attribute__((visibility("default")))
#endif

static int env_int(const char* name, int fallback) {
  const char* v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

#if defined(_WIN32)
#include <windows.h>
BOOL WINAPI DllMain(HINSTANCE h, DWORD reason, LPVOID r) {
  (void)h, (void)r;
  if (reason == DLL_PROCESS_ATTACH) {
    const char* tag = getenv("PTERON_FAKE_TAG");
    fprintf(stderr, "pteron-fake-cuda loaded: %s\n", tag ? tag : "");
  }
  return TRUE;
}
#else
__attribute__((constructor)) static void announce(void) {
  const char* tag = getenv("PTERON_FAKE_TAG");
  fprintf(stderr, "pteron-fake-cuda loaded: %s\n", tag ? tag : "");
}
#endif

static int fake_init(unsigned flags) {
  (void)flags;
  const char* vis = getenv("CUDA_VISIBLE_DEVICES");
  if (vis && (*vis == '\0' || strcmp(vis, "-1") == 0)) return 100;
  return env_int("PTERON_FAKE_CUINIT", 0);
}
static int fake_driver_get_version(int* v) { *v = env_int("PTERON_FAKE_DRIVER_VERSION", 13000); return 0; }
static int fake_device_get_count(int* n) { *n = env_int("PTERON_FAKE_DEVICES", 1); return 0; }
static int fake_device_get(int* dev, int ordinal) { *dev = ordinal; return 0; }
static int fake_device_get_name(char* name, int len, int dev) {
  (void)dev;
  snprintf(name, (size_t)len, "pteron fake GPU");
  return 0;
}
static int fake_device_get_attribute(int* v, int attr, int dev) { (void)attr, (void)dev; *v = 0; return 0; }
static int fake_get_error_name(int r, const char** s) {
  switch (r) {
    case 34: *s = "CUDA_ERROR_STUB_LIBRARY"; return 0;
    case 100: *s = "CUDA_ERROR_NO_DEVICE"; return 0;
    case 999: *s = "CUDA_ERROR_UNKNOWN"; return 0;
    default: *s = 0; return 1;
  }
}
static int fake_primary_ctx_retain(void** ctx, int dev) { (void)dev; *ctx = 0; return 999; }
static int fake_primary_ctx_release(int dev) { (void)dev; return 0; }

struct entry { const char* name; void* fn; };
static const struct entry kEntries[] = {
    {"cuInit", (void*)fake_init},
    {"cuDriverGetVersion", (void*)fake_driver_get_version},
    {"cuDeviceGetCount", (void*)fake_device_get_count},
    {"cuDeviceGet", (void*)fake_device_get},
    {"cuDeviceGetName", (void*)fake_device_get_name},
    {"cuDeviceGetAttribute", (void*)fake_device_get_attribute},
    {"cuGetErrorName", (void*)fake_get_error_name},
    {"cuDevicePrimaryCtxRetain", (void*)fake_primary_ctx_retain},
    {"cuDevicePrimaryCtxRelease", (void*)fake_primary_ctx_release},
};

/* CUresult cuGetProcAddress_v2(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*) */
EXPORT int cuGetProcAddress_v2(const char* symbol, void** pfn, int version, unsigned long long flags,
                               int* status) {
  (void)version, (void)flags;
  int rc = env_int("PTERON_FAKE_PROC_RESULT", 0);
  *pfn = 0;
  if (rc) {
    if (status) *status = 1;
    return rc;
  }
  for (size_t i = 0; i < sizeof kEntries / sizeof kEntries[0]; ++i)
    if (strcmp(symbol, kEntries[i].name) == 0) {
      *pfn = kEntries[i].fn;
      if (status) *status = 0;
      return 0;
    }
  if (status) *status = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
  return 500;              /* CUDA_ERROR_NOT_FOUND */
}
