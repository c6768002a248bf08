// SPDX-License-Identifier: BSD-3-Clause
// delegate.cpp - the XnnpackBackend delegate's C ABI (init, execute, destroy, registration)
// and its profile.
//
// Reading order, one file per stage:
//   init:    parse_blob (graph.cpp) -> the options (options.cpp: compile specs, then the
//            environment, read once) -> plan (plan/plan.cpp): the load-time rewrites
//            (passes/transpose.cpp, passes/fusion*.cpp) -> choose each node's side (pteron's
//            own kernel, or the linked XNNPACK library: plan/sides.cpp, library_first and
//            use_library; load fails naming a node nobody runs) -> schedule the nodes into
//            steps (plan/schedule.cpp): runs of library nodes become one XNNPACK subgraph
//            ("segment"), pteron's own nodes run between them -> decide where each value
//            lives (plan/placement.cpp: delegate argument, constant, XNNPACK-internal, an
//            arena buffer, or a view of another value) -> pteron's kernels prepared, quantized
//            values as codes (plan/qcodes.cpp) -> build the variant (variant.cpp) for the
//            declared input shapes: shapes (shape_inference.cpp), the arena plan (values whose
//            lifetimes do not overlap share bytes), the XNNPACK runtimes (xnn_library.cpp).
//   execute: input shapes -> variant for those shapes (cached; a new shape within the
//            program's bounds plans anew) -> resize outputs -> run the steps in order
//            (pteron's kernels: kernels/own_ops.h).
//   destroy: every runtime, buffer and owned constant; the profile (Options::profile).
//
// The XNNPACK library is optional (backends/xnnpack/CMakeLists.txt, PTERON_XNNPACK_LIBRARY):
// every call into it is in xnn_library.cpp, compiled only where PTERON_XNN_LINKED is 1. Its
// runtimes are created on the process's pthreadpool (pteron_threadpool_pthreadpool()); where
// the process pool is not a pthreadpool, they run on the calling thread.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "graph.h"
#include "half.h"
#include "kernels/own_ops.h"
#include "options.h"
#include "plan/plan.h"
#include "pteron/kernel.h"
#include "types.h"
#include "variant.h"
#include "xnn_library.h"

namespace pteron {
namespace xnnpack {
namespace {

template <typename... A>
int32_t failf(pteron_kernel_context* ctx, int32_t code, const char* fmt, A... a) {
  char buf[768];
  std::snprintf(buf, sizeof buf, fmt, a...);
  return pteron_kernel_fail(ctx, code, buf);
}

int32_t is_available() { return 1; }

// PTERON_XNNPACK_DEBUG=1: at method load, one line per node on stderr (its
// index in the blob, type, side, output shape, why that side), then one
// summary line (segments, steps, the node types pteron runs, the arena).
void print_plan(const Delegate& d, const Variant& var) {
  const Graph& g = d.g;
  std::string own;
  size_t segs = 0;
  size_t views = 0;
  for (size_t si = 0; si < d.steps.size(); ++si) {
    const Step& s = d.steps[si];
    for (uint32_t k : s.nodes) {
      const Node& n = g.nodes[k];
      const bool view = !s.native && n.op == Op::StaticReshape &&
                        (d.home[n.outputs[0]] == Home::Alias || d.home[n.inputs[0]] == Home::Alias);
      std::fprintf(stderr, "pteron XnnpackBackend node %u: %s on %s, step %zu, output %s (%s)\n",
                   n.index, op_name(n.op),
                   s.native ? "XNNPACK library"
                   : view   ? "pteron (a view)"
                            : "pteron",
                   si, shape_str(var.shapes[n.outputs[0]]).c_str(), d.why[k].c_str());
    }
    if (s.native) {
      ++segs;
      continue;
    }
    const Node& n = g.nodes[s.nodes[0]];
    if (n.op == Op::StaticReshape &&
        (d.home[n.outputs[0]] == Home::Alias || d.home[n.inputs[0]] == Home::Alias)) {
      ++views;
      continue;
    }
    const std::string nm = op_name(n.op);
    if (("," + own + ",").find("," + nm + ",") == std::string::npos)
      own += (own.empty() ? "" : ",") + nm;
  }
  std::fprintf(stderr,
               "pteron XnnpackBackend: %zu nodes, %zu XNNPACK segment(s), %zu step(s); "
               "pteron runs: %s; reshapes as views: %zu; transposes cancelled: %zu; "
               "transposes folded: %zu (in %zu chain(s)); fused (PTERON_XNNPACK_FUSE): %zu; "
               "concatenation inputs written in place: %zu; "
               "arena: %zu bytes (%zu without sharing); library: %s; library threads: %s\n",
               g.nodes.size(), segs, d.steps.size(), own.empty() ? "(none)" : own.c_str(), views,
               d.cancelled, d.folded, d.chains, d.fused, d.in_place, var.arena_bytes,
               var.unshared_bytes,
               library_description(), library_threads().c_str());
}

int32_t init(pteron_kernel_context* ctx, const void* processed, size_t size,
             const pteron_compile_spec* specs, size_t num_specs, void** handle) {
  *handle = nullptr;
  std::string err;
  if (!lib_initialize(&err)) return failf(ctx, PTERON_ERROR_NOT_SUPPORTED, "%s", err.c_str());
  std::unique_ptr<Delegate> d(new (std::nothrow) Delegate);
  if (!d) return pteron_kernel_fail(ctx, PTERON_ERROR_OUT_OF_MEMORY, nullptr);
  if (!parse_blob(ctx, static_cast<const uint8_t*>(processed), size, &d->g, &err)) {
    // A datatype or quantization pteron has no kernel for: valid, not run here.
    const bool unsupported = err.find(kUnsupported) != std::string::npos;
    return failf(ctx, unsupported ? PTERON_ERROR_NOT_SUPPORTED : PTERON_ERROR_INVALID_PROGRAM,
                 "%s", err.c_str());
  }
  if (!read_options(specs, num_specs, &d->options, &err))
    return failf(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s", err.c_str());
  if (!plan(*d, &err)) {
    const bool unsupported = err.find("cannot run") != std::string::npos;
    return failf(ctx, unsupported ? PTERON_ERROR_NOT_SUPPORTED : PTERON_ERROR_INVALID_PROGRAM,
                 "%s", err.c_str());
  }
  // Build the declared-shape variant now: a graph XNNPACK refuses fails here,
  // at method load, not at the first execute.
  std::vector<Shape> declared;
  for (uint32_t v : d->g.inputs) declared.push_back(d->g.values[v].dims);
  bool oom = false;
  std::unique_ptr<Variant> var = make_variant(*d, declared, true, &err, &oom);
  if (!var)
    return failf(ctx, oom ? PTERON_ERROR_OUT_OF_MEMORY : PTERON_ERROR_INVALID_PROGRAM, "%s",
                 err.c_str());
  d->variants.push_back(std::move(var));
  d->ptr.assign(d->g.values.size(), nullptr);
  if (d->options.profile) {
    d->profile = true;
    d->step_us.assign(d->steps.size(), 0.0);
    d->step_calls.assign(d->steps.size(), 0);
    d->step_shape.assign(d->steps.size(), Shape());
  }
  if (d->options.debug) print_plan(*d, *d->variants.back());
  *handle = d.release();
  return PTERON_OK;
}

// The dtype of the delegate argument that holds graph value `val`: float32, float16 for an F16
// one, or int8 / uint8 for a per-tensor quantized one (QInt8 / QUInt8).
int32_t argument_dtype(const Value& val) {
  if (val.half) return PTERON_DTYPE_FLOAT16;
  if (val.quant.kind != QuantKind::Tensor) return PTERON_DTYPE_FLOAT32;
  return val.quant.qmin < 0 ? PTERON_DTYPE_INT8 : PTERON_DTYPE_UINT8;
}
const char* argument_dtype_name(int32_t dtype) {
  return dtype == PTERON_DTYPE_INT8    ? "int8"
         : dtype == PTERON_DTYPE_UINT8 ? "uint8"
         : dtype == PTERON_DTYPE_FLOAT16 ? "float16"
                                         : "float32";
}

// The shapes of the call's graph inputs, each within the graph's bound (an
// input of another rank but the declared element count takes the declared
// shape).
int32_t read_input_shapes(pteron_kernel_context* ctx, const Graph& g, pteron_value* const* args,
                          std::vector<Shape>* in_shapes) {
  in_shapes->assign(g.inputs.size(), {});
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const uint32_t v = g.inputs[i];
    const pteron_tensor* t = tensor_arg(g, args, v);
    const int32_t want = argument_dtype(g.values[v]);
    if (!t || t->dtype != want)
      return failf(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                   "%s: argument %u (graph input %zu) must be a %s tensor", kId,
                   g.values[v].external, i, argument_dtype_name(want));
    const Shape& decl = g.values[v].dims;
    Shape s(t->sizes, t->sizes + t->dim);
    if (!t->data && numel(s) != 0)
      return failf(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                   "%s: argument %u (graph input %zu) of shape %s has no data", kId,
                   g.values[v].external, i, shape_str(s).c_str());
    if (s.size() != decl.size()) {
      if (numel(s) != numel(decl))
        return failf(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                     "%s: graph input %zu has shape %s, the "
                     "graph declares %s",
                     kId, i, shape_str(s).c_str(), shape_str(decl).c_str());
      s = decl;
    }
    for (size_t k = 0; k < s.size(); ++k)
      if (s[k] > decl[k])
        return failf(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                     "%s: graph input %zu has shape %s, beyond "
                     "the graph's bound %s",
                     kId, i, shape_str(s).c_str(), shape_str(decl).c_str());
    (*in_shapes)[i] = std::move(s);
  }
  return PTERON_OK;
}

// The variant for these input shapes: cached (most recently used last; its
// runtimes rebuilt if the thread pool was replaced) or built now.
int32_t find_variant(pteron_kernel_context* ctx, Delegate& d, const std::vector<Shape>& in_shapes,
                     Variant** out) {
  Variant* var = nullptr;
  for (size_t i = d.variants.size(); i-- > 0;) {
    if (d.variants[i]->in_shapes == in_shapes) {
      std::unique_ptr<Variant> hit = std::move(d.variants[i]);
      d.variants.erase(d.variants.begin() + long(i));
      d.variants.push_back(std::move(hit));
      var = d.variants.back().get();
      break;
    }
  }
  std::string err;
  if (!var) {
    bool oom = false;
    std::unique_ptr<Variant> nv = make_variant(d, in_shapes, false, &err, &oom);
    if (!nv)
      return failf(ctx, oom ? PTERON_ERROR_OUT_OF_MEMORY : PTERON_ERROR_SHAPE_MISMATCH, "%s: %s",
                   kId, err.c_str());
    if (d.variants.size() >= kMaxVariants) d.variants.erase(d.variants.begin());
    d.variants.push_back(std::move(nv));
    var = d.variants.back().get();
  } else if (var->pool != library_pool()) {
    // The thread pool was replaced (pteron_threadpool_set_num_threads).
    if (!make_runtimes(d, *var, &err))
      return failf(ctx, PTERON_ERROR_DELEGATE_FAILED, "%s: %s", kId, err.c_str());
  }
  *out = var;
  return PTERON_OK;
}

// Outputs take the inferred shapes.
int32_t resize_outputs(pteron_kernel_context* ctx, const Graph& g, pteron_value* const* args,
                       const Variant& var) {
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const uint32_t v = g.outputs[i];
    pteron_tensor* t = tensor_arg(g, args, v);
    const int32_t want = argument_dtype(g.values[v]);
    if (!t || t->dtype != want)
      return failf(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                   "%s: argument %u (graph output %zu) must be a %s tensor", kId,
                   g.values[v].external, i, argument_dtype_name(want));
    const Shape& s = var.shapes[v];
    if (size_t(t->dim) == s.size()) {
      int64_t sizes[PTERON_MAX_DIM];
      bool same = true;
      for (size_t k = 0; k < s.size(); ++k) {
        sizes[k] = int64_t(s[k]);
        same &= t->sizes[k] == sizes[k];
      }
      if (!same) {
        int32_t rc = pteron_tensor_resize(ctx, t, sizes, t->dim);
        if (rc != PTERON_OK) return rc;
      }
    } else {
      size_t have = 1;
      for (int k = 0; k < t->dim; ++k) have *= size_t(t->sizes[k]);
      if (have != numel(s))
        return failf(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                     "%s: graph output %zu has %zu elements, "
                     "the graph computes %s",
                     kId, i, have, shape_str(s).c_str());
    }
    if (!t->data && numel(s) != 0)
      return failf(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: graph output %zu has no storage", kId,
                   i);
  }
  return PTERON_OK;
}

// Runs the steps in order: pteron's own nodes, and XNNPACK segments.
// Adds one step's wall time to the profile when it goes out of scope.
struct StepTimer {
  Delegate& d;
  size_t si;
  std::chrono::steady_clock::time_point t0;
  const Shape& shape;
  ~StepTimer() {
    if (!d.profile) return;
    d.step_us[si] +=
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    ++d.step_calls[si];
    d.step_shape[si] = shape;
  }
};

// One step as an event of the application's profile (kernel.h, "profiling"), while the
// method is profiled: named by its first node's type and the step's index ("Conv2d #4";
// "XNNPACK segment Conv2d #4" for a segment of the library), with that node's debug handle.
struct StepEvent {
  pteron_kernel_context* ctx;
  const Node* node = nullptr;
  size_t si = 0;
  bool native = false;
  uint64_t t0 = 0;
  ~StepEvent() {
    if (!node) return;
    const uint64_t t1 = pteron_profile_clock_ns();
    const std::string name = std::string(native ? "XNNPACK segment " : "") + op_name(node->op) +
                             " #" + std::to_string(si);
    pteron_profile_delegate_event(ctx, name.c_str(),
                                  node->debug_handle ? int32_t(node->debug_handle) : -1, t0, t1);
  }
};

int32_t run_steps(pteron_kernel_context* ctx, Delegate& d, const Variant& var) {
  const Graph& g = d.g;
  std::string err;
  const bool events = pteron_profiling_enabled(ctx) != 0;
  for (size_t si = 0; si < d.steps.size(); ++si) {
    const Step& s = d.steps[si];
    if (var.empty[si]) continue;  // writes only values without elements
    StepEvent event{ctx};
    if (events) {
      event.node = &g.nodes[s.nodes[0]];
      event.si = si;
      event.native = s.native;
      event.t0 = pteron_profile_clock_ns();
    }
    const auto t0 =
        d.profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    StepTimer timer{d, si, t0, var.shapes[d.g.nodes[s.nodes[0]].inputs[0]]};
    if (!s.native) {
      const Node& n = g.nodes[s.nodes[0]];
      if (n.op == Op::StaticReshape && d.ptr[n.inputs[0]] == d.ptr[n.outputs[0]])
        continue;  // a view: nothing to do
      const uint32_t k = s.nodes[0];
      if (d.idle[k]) continue;
      if (!d.kernel[k]->run(n, d.state[k].get(), var.shapes, d.ptr, &err))
        return failf(ctx, PTERON_ERROR_DELEGATE_FAILED, "%s: %s", kId, err.c_str());
      if (d.requant[k]) requantize(g.values[n.outputs[0]].quant, d.ptr[n.outputs[0]],
                                   var.shapes[n.outputs[0]]);
      continue;
    }
    if (!run_segment(var.runtimes[si], s, d.ptr, &err))
      return failf(ctx, PTERON_ERROR_DELEGATE_FAILED, "%s: XNNPACK segment %zu failed: %s", kId, si,
                   err.c_str());
  }
  return PTERON_OK;
}

// Quantized graph inputs, int8 / uint8 in the call, into their float32
// copies: (q - zero_point) * scale, as dequantize_per_tensor; float16 ones widened (exact).
void stage_inputs(Delegate& d, pteron_value* const* args, const Variant& var) {
  const Graph& g = d.g;
  for (uint32_t v : g.inputs) {
    if (g.values[v].half) {
      const pteron_tensor* t = tensor_arg(g, args, v);
      const size_t count = numel(var.shapes[v]);
      const uint16_t* in = static_cast<const uint16_t*>(t->data);
      float* x = d.ptr[v];
      for (size_t i = 0; i < count; ++i) x[i] = pteron::kern::half_bits_to_float(in[i]);
      continue;
    }
    const Quant& q = g.values[v].quant;
    if (q.kind != QuantKind::Tensor) continue;
    const pteron_tensor* t = tensor_arg(g, args, v);
    const size_t count = numel(var.shapes[v]);
    float* x = d.ptr[v];
    const float zp = float(q.zero_point);
    if (t->dtype == PTERON_DTYPE_INT8) {
      const int8_t* in = static_cast<const int8_t*>(t->data);
      for (size_t i = 0; i < count; ++i) x[i] = (float(in[i]) - zp) * q.scale;
    } else {
      const uint8_t* in = static_cast<const uint8_t*>(t->data);
      for (size_t i = 0; i < count; ++i) x[i] = (float(in[i]) - zp) * q.scale;
    }
  }
}

// Quantized graph outputs, from their float32 copies (on the grid already)
// into the call's int8 / uint8 tensors: clamp(round(x / scale) + zero_point); float16 ones
// rounded to nearest even.
void stage_outputs(Delegate& d, pteron_value* const* args, const Variant& var) {
  const Graph& g = d.g;
  for (uint32_t v : g.outputs) {
    if (g.values[v].half) {
      pteron_tensor* t = tensor_arg(g, args, v);
      const size_t count = numel(var.shapes[v]);
      const float* x = d.ptr[v];
      uint16_t* out = static_cast<uint16_t*>(t->data);
      for (size_t i = 0; i < count; ++i) out[i] = pteron::kern::float_to_half_bits(x[i]);
      continue;
    }
    const Quant& q = g.values[v].quant;
    if (q.kind != QuantKind::Tensor) continue;
    pteron_tensor* t = tensor_arg(g, args, v);
    const size_t count = numel(var.shapes[v]);
    const float* x = d.ptr[v];
    const float inv = static_cast<float>(1.0 / double(q.scale));
    for (size_t i = 0; i < count; ++i) {
      float r = std::nearbyint(x[i] * inv) + float(q.zero_point);
      r = r > float(q.qmin) ? r : float(q.qmin);  // NaN too
      r = r < float(q.qmax) ? r : float(q.qmax);
      if (t->dtype == PTERON_DTYPE_INT8)
        static_cast<int8_t*>(t->data)[i] = static_cast<int8_t>(r);
      else
        static_cast<uint8_t*>(t->data)[i] = static_cast<uint8_t>(r);
    }
  }
}

int32_t execute(pteron_kernel_context* ctx, void* handle, pteron_value* const* args,
                size_t num_args) {
  Delegate& d = *static_cast<Delegate*>(handle);
  const Graph& g = d.g;
  if (num_args < g.num_externals)
    return failf(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: %zu arguments, the graph needs %u", kId,
                 num_args, g.num_externals);
  std::vector<Shape> in_shapes;
  int32_t rc = read_input_shapes(ctx, g, args, &in_shapes);
  if (rc != PTERON_OK) return rc;
  Variant* var = nullptr;
  rc = find_variant(ctx, d, in_shapes, &var);
  if (rc != PTERON_OK) return rc;
  rc = resize_outputs(ctx, g, args, *var);
  if (rc != PTERON_OK) return rc;
  bind_storage(d, args, *var);
  stage_inputs(d, args, *var);
  rc = run_steps(ctx, d, *var);
  if (rc == PTERON_OK) stage_outputs(d, args, *var);
  return rc;
}

// PTERON_XNNPACK_PROFILE=1: when the delegate is destroyed, its steps on
// stderr, slowest first: total and mean wall time (microseconds), share,
// node type, the first input's shape. Steps are timed one by one with
// steady_clock (a few tens of nanoseconds each).
void print_profile(const Delegate& d) {
  double total = 0;
  std::vector<size_t> order;
  for (size_t si = 0; si < d.steps.size(); ++si)
    if (d.step_calls[si]) {
      order.push_back(si);
      total += d.step_us[si];
    }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return d.step_us[a] > d.step_us[b]; });
  std::fprintf(stderr, "pteron XnnpackBackend profile: %zu timed step(s), %.1f us in all\n",
               order.size(), total);
  for (size_t si : order) {
    const Step& s = d.steps[si];
    const Node& n = d.g.nodes[s.nodes[0]];
    std::fprintf(stderr, "  %10.1f us %8.2f us/call %5.1f%%  step %zu: %s %s%s\n", d.step_us[si],
                 d.step_us[si] / double(d.step_calls[si]),
                 total > 0 ? 100 * d.step_us[si] / total : 0.0, si,
                 s.native ? "XNNPACK segment from" : "pteron", op_name(n.op),
                 (" " + shape_str(d.step_shape[si])).c_str());
  }
}

}  // namespace

Delegate::~Delegate() {
  if (profile) print_profile(*this);
}

namespace {

void destroy(void* handle) { delete static_cast<Delegate*>(handle); }

const pteron_backend_interface kInterface = {
    sizeof(pteron_backend_interface), kId, &is_available, &init, &execute, &destroy};

struct Registration {
  Registration() {
    pteron_register_backend(PTERON_ABI_VERSION, PTERON_COMPONENT_NAME, &kInterface);
  }
} registration;

}  // namespace
}  // namespace xnnpack
}  // namespace pteron
