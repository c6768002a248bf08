// SPDX-License-Identifier: BSD-3-Clause
// device.cpp - a PteronCudaBackend graph on the GPU (see device.h).
#include "device.h"

#include <cstdio>
#include <memory>
#include <new>

#include "driver.h"

#if PTERON_CUDA_HAVE_FATBIN
extern "C" const unsigned char pteron_cuda_fatbin_begin[];  // fatbin_embed.c
#endif

namespace pteron {
namespace cuda {

struct DeviceGraph {
  const DriverApi* api = nullptr;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  bool ctx_retained = false;
  CUmodule module = nullptr;
  CUstream stream = nullptr;
  bool own_stream = false;  // made here (else the application's, extension_cuda)
  const Graph* g = nullptr;
  std::vector<Launch> launches;
  std::vector<CUfunction> fns;        // per launch
  std::vector<CUdeviceptr> mem;       // per value
  // per launch: its kernelParams, made once (the device addresses do not change)
  std::vector<std::unique_ptr<LaunchArgs>> args;
};

const char* embedded_train() {
#if PTERON_CUDA_HAVE_FATBIN
  return PTERON_CUDA_TRAIN;
#else
  return "";
#endif
}

namespace {

// Pushes the graph's context for the scope.
struct Current {
  const DriverApi& a;
  bool pushed = false;
  Current(const DriverApi& api, CUcontext c) : a(api) { pushed = a.CtxPushCurrent(c) == CUDA_SUCCESS; }
  ~Current() {
    CUcontext prev = nullptr;
    if (pushed) a.CtxPopCurrent(&prev);
  }
};

int32_t failed(std::string* err, const char* call, CUresult r) {
  *err = std::string("PteronCudaBackend: ") + call + " failed: " + result_name(r);
  return r == CUDA_ERROR_OUT_OF_MEMORY ? PTERON_ERROR_OUT_OF_MEMORY : PTERON_ERROR_DELEGATE_FAILED;
}

}  // namespace

void device_release(DeviceGraph* d) {
  if (!d) return;
  if (d->api && d->ctx) {
    Current cur(*d->api, d->ctx);
    for (CUdeviceptr p : d->mem)
      if (p) d->api->MemFree(p);
    if (d->stream && d->own_stream) d->api->StreamDestroy(d->stream);
    if (d->module) d->api->ModuleUnload(d->module);
  }
  if (d->ctx_retained) d->api->DevicePrimaryCtxRelease(d->dev);
  delete d;
}

int32_t device_prepare(const Graph& g, const std::vector<Launch>& launches,
                       const std::vector<const void*>& constant_data, int ordinal, void* stream,
                       DeviceGraph** out, std::string* err) {
  *out = nullptr;
  const DriverState& ds = driver();
  if (ds.code != PTERON_OK) {
    *err = "PteronCudaBackend: " + ds.message;
    return ds.code;
  }
#if !PTERON_CUDA_HAVE_FATBIN
  (void)g, (void)launches, (void)constant_data, (void)ordinal, (void)stream;
  std::string names;
  for (const Launch& l : launches)
    if (names.find(kernel_name(l.kernel)) == std::string::npos)
      names += (names.empty() ? "" : ", ") + std::string(kernel_name(l.kernel));
  *err = "PteronCudaBackend: this build of backend_cuda has no device code (it was built without a "
         "CUDA train: Conan option cuda_train, CMake PTERON_CUDA_TRAIN), so it cannot run the "
         "kernels this graph needs: " + names;
  return PTERON_ERROR_NOT_SUPPORTED;
#else
  const DriverApi& a = ds.api;
  if (ordinal < 0 || ordinal >= ds.devices) {
    *err = "PteronCudaBackend: no CUDA device " + std::to_string(ordinal) + " (this machine has " +
           std::to_string(ds.devices) + "; pteron_cuda_set_device chooses one by index)";
    return PTERON_ERROR_INVALID_ARGUMENT;
  }
  std::unique_ptr<DeviceGraph, void (*)(DeviceGraph*)> d(new (std::nothrow) DeviceGraph, device_release);
  if (!d) return PTERON_ERROR_OUT_OF_MEMORY;
  d->api = &a;
  d->g = &g;
  d->launches = launches;
  CUresult r = a.DeviceGet(&d->dev, ordinal);
  if (r != CUDA_SUCCESS) return failed(err, "cuDeviceGet", r);
  r = a.DevicePrimaryCtxRetain(&d->ctx, d->dev);
  if (r != CUDA_SUCCESS) return failed(err, "cuDevicePrimaryCtxRetain", r);
  d->ctx_retained = true;
  Current cur(a, d->ctx);
  if (!cur.pushed) return failed(err, "cuCtxPushCurrent", CUDA_ERROR_INVALID_CONTEXT);
  r = a.ModuleLoadData(&d->module, pteron_cuda_fatbin_begin);
  if (r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ||
      r == CUDA_ERROR_JIT_COMPILER_NOT_FOUND) {
    int major = 0, minor = 0;
    a.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->dev);
    a.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->dev);
    char name[256] = "?";
    a.DeviceGetName(name, int(sizeof name), d->dev);
    *err = std::string("PteronCudaBackend: this package's device code (train ") + PTERON_CUDA_TRAIN +
           ", CUDA " PTERON_CUDA_TRAIN_CUDA ") has no SASS for " + name + " (sm_" +
           std::to_string(major) + std::to_string(minor) + "; SASS " PTERON_CUDA_SASS_LIST
           "), and its PTX (" PTERON_CUDA_PTX_ARCH ", PTX ISA " PTERON_CUDA_PTX_ISA
           ") cannot be JIT-compiled here: " + result_name(r) + ", driver CUDA " +
           cuda_version_string(ds.version) + ". A PTX JIT needs a driver of CUDA " PTERON_CUDA_TRAIN_CUDA
           " or newer, a GPU of " PTERON_CUDA_PTX_ARCH " or newer, and CUDA_DISABLE_PTX_JIT unset: "
           "update the driver, or use a package of a train with SASS for this GPU";
    return PTERON_ERROR_NOT_SUPPORTED;
  }
  if (r != CUDA_SUCCESS) return failed(err, "cuModuleLoadData", r);
  d->fns.resize(launches.size());
  for (size_t i = 0; i < launches.size(); ++i) {
    const char* fn = kernel_function(launches[i].kernel);
    r = a.ModuleGetFunction(&d->fns[i], d->module, fn);
    if (r != CUDA_SUCCESS) return failed(err, fn, r);
  }
  d->stream = static_cast<CUstream>(stream);
  if (!d->stream) {
    r = a.StreamCreate(&d->stream, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) return failed(err, "cuStreamCreate", r);
    d->own_stream = true;
  }
  d->mem.assign(g.values.size(), 0);
  for (size_t i = 0; i < g.values.size(); ++i) {
    const size_t bytes = size_t(g.values[i].numel) * sizeof(float);
    r = a.MemAlloc(&d->mem[i], bytes ? bytes : 4);
    if (r != CUDA_SUCCESS) return failed(err, "cuMemAlloc", r);
    if (i < constant_data.size() && constant_data[i]) {
      r = a.MemcpyHtoDAsync(d->mem[i], constant_data[i], bytes, d->stream);
      if (r != CUDA_SUCCESS) return failed(err, "cuMemcpyHtoDAsync", r);
    }
  }
  const std::vector<uint64_t> address(d->mem.begin(), d->mem.end());
  for (const Launch& l : d->launches) d->args.push_back(launch_args(l, address));
  r = a.StreamSynchronize(d->stream);
  if (r != CUDA_SUCCESS) return failed(err, "cuStreamSynchronize", r);
  *out = d.release();
  return PTERON_OK;
#endif
}

int32_t device_execute(DeviceGraph* d, pteron_value* const* args, size_t num_args, std::string* err) {
  const Graph& g = *d->g;
  const DriverApi& a = *d->api;
  std::vector<float*> host;
  const int32_t code = external_data(g, args, num_args, &host, err);
  if (code != PTERON_OK) return code;
  Current cur(a, d->ctx);
  if (!cur.pushed) return failed(err, "cuCtxPushCurrent", CUDA_ERROR_INVALID_CONTEXT);
  CUresult r;
  for (size_t i = 0; i < g.values.size(); ++i)
    if (host[i] && !g.values[i].is_output) {
      r = a.MemcpyHtoDAsync(d->mem[i], host[i], size_t(g.values[i].numel) * 4, d->stream);
      if (r != CUDA_SUCCESS) return failed(err, "cuMemcpyHtoDAsync", r);
    }
  for (size_t li = 0; li < d->launches.size(); ++li) {
    const Launch& l = d->launches[li];
    if (l.threads == 0) continue;  // an empty output: nothing to launch
    r = a.LaunchKernel(d->fns[li], l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1],
                       l.block[2], 0, d->stream, d->args[li]->params, nullptr);
    if (r != CUDA_SUCCESS) return failed(err, kernel_name(l.kernel), r);
  }
  for (size_t i = 0; i < g.values.size(); ++i)
    if (host[i] && g.values[i].is_output) {
      r = a.MemcpyDtoHAsync(host[i], d->mem[i], size_t(g.values[i].numel) * 4, d->stream);
      if (r != CUDA_SUCCESS) return failed(err, "cuMemcpyDtoHAsync", r);
    }
  r = a.StreamSynchronize(d->stream);
  if (r != CUDA_SUCCESS) return failed(err, "cuStreamSynchronize (the launches)", r);
  return PTERON_OK;
}

}  // namespace cuda
}  // namespace pteron
