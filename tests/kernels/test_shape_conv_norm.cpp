// SPDX-License-Identifier: BSD-3-Clause
// test_shape_conv_norm.cpp - the portable kernels of shape.cpp, index.cpp,
// conv.cpp, pool.cpp and norm.cpp (shape and copy operators, indexing,
// convolution, pooling, normalisation).
//
// Runs against the real runtime and kernels_portable (linked as a consumer
// links them): each kernel is called through the runtime's one test-only
// entry point, pteron_testing_call_kernel (pteron/testing.h), so the real
// registry, pteron_kernel_fail, pteron_tensor_resize and
// pteron_kernel_scratch are behind every call. Built with
// -DPTERON_BUILD_TESTS=ON (tests/kernels/CMakeLists.txt) and run by
// tests/test_kernels_native.py; kernel_test_util.h gives the command line.
//
// Expected values were computed with eager PyTorch 2.13.0 (CPU). Inputs are exact binary fractions
// made by
//   def inp(*shape, dtype=float32, mod=13, mul=7, off=6, scale=0.25):
//       v = [((i*mul) % mod - off) * scale for i in range(prod(shape))]
//       return torch.tensor(v).reshape(shape).to(dtype)
// (Inp() below is the same function), and each k* array notes the torch
// call that produced it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernel_test_util.h"
#include "pteron/kernel.h"
#include "pteron/testing.h"

// What a kernel call left behind: the code and message it recorded.
struct CallResult {
  std::string message;
  int32_t code = 0;
};

// ---- test helpers ---------------------------------------------------------------

static int g_failures = 0;
static int g_checks = 0;
#define CHECK(cond)                                                                 \
  do {                                                                              \
    ++g_checks;                                                                     \
    if (!(cond)) {                                                                  \
      ++g_failures;                                                                 \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                               \
  } while (0)

static int64_t elem_size(int32_t d) {
  switch (d) {
    case PTERON_DTYPE_FLOAT64:
    case PTERON_DTYPE_INT64: return 8;
    case PTERON_DTYPE_FLOAT32:
    case PTERON_DTYPE_INT32: return 4;
    case PTERON_DTYPE_INT16:
    case PTERON_DTYPE_FLOAT16: return 2;
    default: return 1;
  }
}

// A tensor with its own storage. Bounded-dynamic by default with room for
// `capacity` elements (so kernels can resize it), contiguous unless a dim
// order is given.
struct Tensor {
  pteron_tensor t{};
  std::vector<uint64_t> storage;
  Tensor(int32_t dtype, std::vector<int64_t> sizes, std::vector<uint8_t> dim_order = {},
         int64_t capacity = -1, int32_t dynamism = PTERON_SHAPE_DYNAMIC_BOUND) {
    t.dtype = dtype;
    t.dim = static_cast<int32_t>(sizes.size());
    t.dynamism = dynamism;
    int64_t n = 1;
    for (size_t i = 0; i < sizes.size() && i < PTERON_MAX_DIM; ++i) {
      t.sizes[i] = t.bound[i] = sizes[i];
      n *= sizes[i] > 0 ? sizes[i] : 1;
      t.dim_order[i] = dim_order.empty() ? static_cast<uint8_t>(i) : dim_order[i];
    }
    if (capacity < 0) capacity = n;
    t.capacity_bytes = capacity * elem_size(dtype);
    storage.assign(static_cast<size_t>((t.capacity_bytes + 7) / 8 + 1), 0);
    t.data = storage.data();
    set_strides_from_dim_order(t);
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int32_t i = 0; i < t.dim; ++i) n *= t.sizes[i];
    return n;
  }
  // Storage offset of the i-th element in logical row-major order.
  int64_t offset(int64_t i) const {
    int64_t off = 0;
    for (int32_t d = t.dim - 1; d >= 0; --d) {
      off += (i % t.sizes[d]) * t.strides[d];
      i /= t.sizes[d];
    }
    return off;
  }
  void set(int64_t i, double v) {
    int64_t o = offset(i);
    switch (t.dtype) {
      case PTERON_DTYPE_FLOAT32: static_cast<float*>(t.data)[o] = static_cast<float>(v); break;
      case PTERON_DTYPE_FLOAT64: static_cast<double*>(t.data)[o] = v; break;
      case PTERON_DTYPE_INT64: static_cast<int64_t*>(t.data)[o] = static_cast<int64_t>(v); break;
      case PTERON_DTYPE_INT32: static_cast<int32_t*>(t.data)[o] = static_cast<int32_t>(v); break;
      case PTERON_DTYPE_UINT8:
        static_cast<uint8_t*>(t.data)[o] = static_cast<uint8_t>(static_cast<int64_t>(v));
        break;
      case PTERON_DTYPE_INT8: static_cast<int8_t*>(t.data)[o] = static_cast<int8_t>(v); break;
      case PTERON_DTYPE_INT16: static_cast<int16_t*>(t.data)[o] = static_cast<int16_t>(v); break;
      case PTERON_DTYPE_BOOL: static_cast<bool*>(t.data)[o] = v != 0; break;
      default: break;
    }
  }
  double get(int64_t i) const {
    int64_t o = offset(i);
    switch (t.dtype) {
      case PTERON_DTYPE_FLOAT32: return static_cast<const float*>(t.data)[o];
      case PTERON_DTYPE_FLOAT64: return static_cast<const double*>(t.data)[o];
      case PTERON_DTYPE_INT64: return static_cast<double>(static_cast<const int64_t*>(t.data)[o]);
      case PTERON_DTYPE_INT32: return static_cast<const int32_t*>(t.data)[o];
      case PTERON_DTYPE_UINT8: return static_cast<const uint8_t*>(t.data)[o];
      case PTERON_DTYPE_INT8: return static_cast<const int8_t*>(t.data)[o];
      case PTERON_DTYPE_INT16: return static_cast<const int16_t*>(t.data)[o];
      case PTERON_DTYPE_BOOL: return static_cast<const bool*>(t.data)[o];
      default: return NAN;
    }
  }
  Tensor& fill(const std::vector<double>& v) {
    for (size_t i = 0; i < v.size(); ++i) set(static_cast<int64_t>(i), v[i]);
    return *this;
  }
  bool shape_is(std::vector<int64_t> s) const {
    if (static_cast<size_t>(t.dim) != s.size()) return false;
    for (size_t i = 0; i < s.size(); ++i)
      if (t.sizes[i] != s[i]) return false;
    return true;
  }
};

static std::vector<double> Inp(int64_t n, int mod = 13, int mul = 7, int off = 6,
                               double scale = 0.25) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = ((i * mul) % mod - off) * scale;
  return v;
}

// Argument values. Lists keep their backing storage alive in the Call.
struct Call {
  std::vector<pteron_value> vals;
  std::vector<std::vector<int64_t>> lists;
  std::vector<std::vector<pteron_tensor*>> tlists;
  CallResult ctx;
  Call& tensor(Tensor& x) {
    pteron_value v{};
    v.tag = PTERON_VALUE_TENSOR;
    v.u.tensor = &x.t;
    vals.push_back(v);
    return *this;
  }
  Call& none() {
    pteron_value v{};
    v.tag = PTERON_VALUE_NONE;
    vals.push_back(v);
    return *this;
  }
  Call& i(int64_t x) {
    pteron_value v{};
    v.tag = PTERON_VALUE_INT;
    v.u.i = x;
    vals.push_back(v);
    return *this;
  }
  Call& b(bool x) {
    pteron_value v{};
    v.tag = PTERON_VALUE_BOOL;
    v.u.b = x;
    vals.push_back(v);
    return *this;
  }
  Call& d(double x) {
    pteron_value v{};
    v.tag = PTERON_VALUE_DOUBLE;
    v.u.d = x;
    vals.push_back(v);
    return *this;
  }
  Call& ints(std::vector<int64_t> x) {
    lists.reserve(64);
    lists.push_back(std::move(x));
    pteron_value v{};
    v.tag = PTERON_VALUE_INT_LIST;
    v.u.int_list.data = lists.back().data();
    v.u.int_list.size = lists.back().size();
    vals.push_back(v);
    return *this;
  }
  Call& tensors(std::vector<Tensor*> x) {
    tlists.reserve(64);
    std::vector<pteron_tensor*> p;
    for (Tensor* t : x) p.push_back(t ? &t->t : nullptr);
    tlists.push_back(std::move(p));
    pteron_value v{};
    v.tag = PTERON_VALUE_TENSOR_LIST;
    v.u.tensor_list.data = tlists.back().data();
    v.u.tensor_list.size = tlists.back().size();
    vals.push_back(v);
    return *this;
  }
  int32_t run(const char* op) {
    const std::string full = op;
    const size_t dot = full.rfind('.');
    const std::string name = full.substr(0, dot), overload = full.substr(dot + 1);
    std::vector<pteron_value*> ptrs;
    for (auto& v : vals) ptrs.push_back(&v);
    char msg[1024];
    const int32_t rc =
        pteron_testing_call_kernel(name.c_str(), overload.c_str(), nullptr, ptrs.data(),
                                   ptrs.size(), msg, sizeof msg, &ctx.code);
    ctx.message = msg;
    if (rc == PTERON_ERROR_MISSING_OPERATOR && ctx.code == PTERON_OK) {
      std::fprintf(stderr, "kernel %s is not registered\n", op);
      return -1;
    }
    return rc;
  }
};

static bool close_to(const Tensor& x, const double* want, size_t n, double rtol = 1e-4,
                     double atol = 1e-5) {
  if (static_cast<size_t>(x.numel()) != n) {
    std::fprintf(stderr, "  numel %lld != %zu\n", (long long)x.numel(), n);
    return false;
  }
  for (size_t i = 0; i < n; ++i) {
    double g = x.get(static_cast<int64_t>(i));
    if (!(std::fabs(g - want[i]) <= atol + rtol * std::fabs(want[i]))) {
      std::fprintf(stderr, "  element %zu: got %.9g want %.9g\n", i, g, want[i]);
      return false;
    }
  }
  return true;
}
template <size_t N>
static bool close_to(const Tensor& x, const double (&want)[N]) {
  return close_to(x, want, N);
}
template <size_t N>
static bool equal_to(const Tensor& x, const int64_t (&want)[N]) {
  std::vector<double> w(want, want + N);
  return close_to(x, w.data(), N, 0, 0);
}
static bool mentions(const Call& c, const char* s) {
  bool ok = c.ctx.message.find(s) != std::string::npos;
  if (!ok) std::fprintf(stderr, "  message '%s' lacks '%s'\n", c.ctx.message.c_str(), s);
  return ok;
}

// ---- expected values from torch ------------------------------------------------
// x = inp(1,2,5,5); w = inp(4,1,3,3, mod=5, mul=3, off=2, scale=0.5)
// b = [0.5,-1.0,0.25,2.0]
// kConv2d = aten.convolution(x, w, b, [2,2],[1,1],[1,1],False,[0,0],2)  -> [1,4,3,3]
// kConv1d = aten.convolution(inp(2,3,7), inp(2,3,3, mod=7, mul=2, off=3, scale=0.5),
//                            None, [1],[2],[2],False,[0],1)                 -> [2,2,7]
// kConvInt = aten.convolution(xi, wi, tensor([1,2,3,4,5]), [1,2],[0,1],[1,1],False,[0,0],1)
//   xi = arange(96).reshape(2,3,4,4) % 7 - 3, wi = arange(60).reshape(5,3,2,2) % 5 - 2 (int64)
// xp = inp(1,2,5,5, mod=17, mul=5, off=8)
// kMaxPool, kMaxPoolIdx = aten.max_pool2d_with_indices(xp, [3,3],[2,2],[1,1],[1,1],True)
// kMaxPoolDil, kMaxPoolDilIdx = aten.max_pool2d_with_indices(xp[0], [2,2],[],[0,0],[2,2],False)
// kAvgPoolExcl = aten.avg_pool2d(xp, [3,3],[2,2],[1,1],True,False,None)
// kAvgPoolIncl = aten.avg_pool2d(xp, [3,3],[2,2],[1,1],True,True,None)
// kAvgPoolDiv = aten.avg_pool2d(xp, [2,2],[],[0,0],False,True,3)
// kBatchNorm = aten._native_batch_norm_legit_no_training(inp(2,3,2,2, mod=11, mul=3, off=5),
//   [1.5,-0.5,2.0], [0.1,0.2,-0.3], [0.25,-0.5,1.0], [1.0,0.5,2.0], 0.1, 1e-5)[0]
// kLayerNorm* = native_layer_norm(inp(2,3,4, mod=11, mul=4, off=5), [3,4],
//   inp(3,4, mod=5, mul=2, off=1, scale=0.5), inp(3,4, mod=3, mul=1, off=1, scale=0.1), 1e-5)
// kLayerNorm1* = native_layer_norm(inp(2,3,4, mod=11, mul=4, off=5), [4], None, None, 1e-5)
// kPermute = aten.permute_copy(inp(2,3,4), [2,0,1]); kView = inp(1,2,2,3).reshape(2,6)
// kExpand = aten.expand_copy(inp(3,1), [2,-1,4]); kSlice = aten.slice_copy(inp(4,6), 1, -5, 100, 2)
// kSelect = aten.select_copy(inp(2,3,4), -2, -1)
// kCat = torch.cat([int32 [[1,2],[3,4]], torch.empty(0), int64 [[5],[6]]], 1, out=float32)
// kToU8 / kToI32 = tensor([-1.0, 300.0, -3.7, 2.5]).to(uint8 / int32)
// kNanTo* = tensor([nan, 1e20, -1e20, 3e9, 2.7, -70000.5]).to(int32 / int64 / int16 /
//   int8 / uint8), the same from float32 and float64 (PyTorch on x86: NaN and
//   out-of-range values give INT_MIN for 32/64-bit targets, narrower ones wrap
//   that int32 value)
// kIndexSelect = index_select(inp(3,4), 1, int32 [3,0,3])
// kEmbedding = F.embedding(tensor([[4,0],[2,2]]), inp(5,3))
const double kConv2d[] = {-0.875, -1.125, 0.125,  0.875, 6.5,    0.875,  0.125, -1.125, -0.875,
                          -1.75,  -0.875, -1.125, -3.25, -4.375, -2.375, 1.5,   1.875,  1.375,
                          0.125,  -0.625, -0.125, -2.25, -1.875, 1.25,   2.875, 2.0,    0.0,
                          2.0,    4.0,    4.5,    3.0,   1.625,  -0.75,  1.375, 1.25,   1.875};
const double kConv1d[] = {-1.5,  3.0,    1.75,   -0.125, 1.25,  -1.375, 4.875,
                          -1.0,  -2.375, -1.375, -1.125, 4.0,   1.5,    -3.0,
                          -1.25, 0.0,    -0.25,  -3.75,  4.125, -1.75,  -0.375,
                          2.625, -0.375, -2.625, 4.125,  -3.75, -0.375, 0.0};
const int64_t kConvInt[] = {11,  20,  1,  -14, -13, 7,   10,  -4,  -1,  0,  -15, -1, 11,  10,  6,
                            -13, 7,   -1, 9,   10,  12,  1,   3,   -15, 14, 3,   14, 8,   10,  -10,
                            1,   6,   14, 1,   9,   -11, -13, -10, 13,  16, 9,   3,  3,   0,   14,
                            5,   16,  10, -13, -3,  -5,  11,  20,  1,   6,  -9,  -1, 10,  9,   6,
                            0,   -15, -1, -3,  -4,  3,   3,   -4,  -3,  9,  10,  12, 8,   11,  12,
                            1,   -7,  8,  8,   10,  -10, -1,  1,   -9,  14, 20,  9,  -13, -10, 13};
const double kMaxPool[] = {1.25, 1.75, 1.75, 2.0, 1.5,  1.5, 1.75, 1.25, 1.25,
                           1.5,  2.0,  1.0,  1.5, 1.75, 2.0, 1.25, 1.5,  2.0};
const int64_t kMaxPoolIdx[] = {6, 3, 3, 10, 13, 13, 20, 23, 23, 5, 2, 8, 5, 12, 19, 15, 22, 19};
const double kMaxPoolDil[] = {2.0, 0.5, 2.0, 0.25, 2.0, 2.0, 1.75, 1.75};
const int64_t kMaxPoolDilIdx[] = {10, 2, 10, 12, 2, 2, 12, 12};
const double kAvgPoolExcl[] = {-0.375,  0.0833333358168602,  0.1875,
                               0.5,     -0.2222222238779068, 0.0,
                               0.3125,  -0.2916666567325592, -0.1875,
                               0.0625,  0.1666666716337204,  -0.4375,
                               -0.125,  -0.1388888955116272, 0.0833333358168602,
                               -0.3125, -0.2083333283662796, 0.25};
const double kAvgPoolIncl[] = {-0.1666666716337204, 0.0555555559694767,  0.0833333358168602,
                               0.3333333432674408,  -0.2222222238779068, 0.0,
                               0.1388888955116272,  -0.1944444477558136, -0.0833333358168602,
                               0.02777777798473835, 0.1111111119389534,  -0.1944444477558136,
                               -0.0833333358168602, -0.1388888955116272, 0.0555555559694767,
                               -0.1388888955116272, -0.1388888955116272, 0.1111111119389534};
const double kAvgPoolDiv[] = {
    -0.5,  0.0, 0.5833333134651184, -0.3333333432674408, 0.0833333358168602, 0.5833333134651184,
    -0.25, 0.25};
const double kBatchNorm[] = {
    -2.1499886512756348, -1.0249943733215332, 0.09999999403953552, 1.224994421005249,
    0.5535498261451721,  0.0232250839471817,  -0.5070996880531311, -1.0374244451522827,
    -2.774867534637451,  -1.714210033416748,  -0.6535525321960449, -3.4819724559783936,
    -1.0249943733215332, 0.09999999403953552, 1.224994421005249,   -1.7749905586242676,
    0.0232250839471817,  -0.5070996880531311, -1.0374244451522827, 0.3767749071121216,
    -1.714210033416748,  -0.6535525321960449, -3.4819724559783936, -2.4213149547576904};
const double kLayerNorm[] = {
    0.5885717272758484,   -0.08763640373945236, 1.6398967504501343,   -0.10000000149011612,
    0.12519486248493195,  -0.5635327100753784,  -0.48810404539108276, 0.6384938359260559,
    0.10000000149011612,  -0.5757404565811157,  -0.36306512355804443, -0.5885717272758484,
    0.050754375755786896, 0.5070828199386597,   -1.8323967456817627,  -0.10000000149011612,
    1.3430843353271484,   0.5796729922294617,   0.0781642273068428,   2.5080044269561768,
    0.10000000149011612,  0.5852470397949219,   0.8085915446281433,   -0.050754375755786896};
const double kLayerNormMean[] = {-0.1041666716337204, -0.020833319053053856};
const double kLayerNormRstd[] = {1.2018706798553467, 1.3156744241714478};
const double kLayerNorm1[] = {
    -1.044176459312439,  0.24096380174160004, 1.5261040925979614,   -0.7228913903236389,
    -0.1999974250793457, 1.39998197555542,    -1.39998197555542,    0.1999974250793457,
    1.3130570650100708,  -0.5252228379249573, 0.5252228379249573,   -1.3130570650100708,
    -0.1999974250793457, 1.39998197555542,    -1.39998197555542,    0.1999974101781845,
    0.7228913903236389,  -1.5261040925979614, -0.24096380174160004, 1.044176459312439,
    -0.1999974250793457, 1.39998197555542,    -1.39998197555542,    0.1999974250793457};
const double kLayerNorm1Rstd[] = {1.2851402759552002, 1.5999794006347656, 1.0504456758499146,
                                  1.5999794006347656, 1.2851402759552002, 1.5999794006347656};
const double kPermute[] = {-1.5, -1.0, -0.5, 0.0,  0.5,   1.0,   0.25,  0.75,
                           1.25, -1.5, -1.0, -0.5, -1.25, -0.75, -0.25, 0.25,
                           0.75, 1.25, 0.5,  1.0,  1.5,   -1.25, -0.75, -0.25};
const double kView[] = {-1.5, 0.25, -1.25, 0.5, -1.0, 0.75, -0.75, 1.0, -0.5, 1.25, -0.25, 1.5};
const double kExpand[] = {-1.5,  -1.5,  -1.5,  -1.5,  0.25,  0.25,  0.25,  0.25,
                          -1.25, -1.25, -1.25, -1.25, -1.5,  -1.5,  -1.5,  -1.5,
                          0.25,  0.25,  0.25,  0.25,  -1.25, -1.25, -1.25, -1.25};
const double kSlice[] = {0.25, 0.5, 0.75, 1.0, 1.25, 1.5, -1.5, -1.25, -1.0, -0.75, -0.5, -0.25};
const double kSelect[] = {-0.5, 1.25, -0.25, 1.5, 1.0, -0.5, 1.25, -0.25};
const double kCat[] = {1.0, 2.0, 5.0, 3.0, 4.0, 6.0};
const int64_t kToU8[] = {255, 44, 253, 2};
const int64_t kToI32[] = {-1, 300, -3, 2};
const int64_t kNanToI32[] = {-2147483648LL, -2147483648LL, -2147483648LL, -2147483648LL, 2, -70000};
const int64_t kNanToI64[] = {INT64_MIN, INT64_MIN, INT64_MIN, 3000000000LL, 2, -70000};
const int64_t kNanToI16[] = {0, 0, 0, 0, 2, -4464};
const int64_t kNanToI8[] = {0, 0, 0, 0, 2, -112};
const int64_t kNanToU8[] = {0, 0, 0, 0, 2, 144};
const double kIndexSelect[] = {0.5, -1.5, 0.5, 1.0, -1.0, 1.0, 1.5, -0.5, 1.5};
const double kEmbedding[] = {0.0,   -1.5, 0.25, -1.5,  0.25, -1.25,
                             -0.75, 1.0,  -0.5, -0.75, 1.0,  -0.5};

// ---- tests ------------------------------------------------------------------------

static void test_shape_ops() {
  {  // permute_copy, with the program's trailing return slot
    Tensor x(PTERON_DTYPE_FLOAT32, {2, 3, 4}), out(PTERON_DTYPE_FLOAT32, {4, 2, 3});
    x.fill(Inp(24));
    Call c;
    c.tensor(x).ints({2, 0, 1}).tensor(out).tensor(out);
    CHECK(c.run("aten::permute_copy.out") == PTERON_OK);
    CHECK(out.shape_is({4, 2, 3}));
    CHECK(close_to(out, kPermute));
  }
  {  // permute_copy into a channels-last out: logical values are unchanged
    Tensor x(PTERON_DTYPE_FLOAT32, {2, 3, 4}), out(PTERON_DTYPE_FLOAT32, {4, 2, 3}, {0, 2, 1});
    x.fill(Inp(24));
    Call c;
    c.tensor(x).ints({2, 0, 1}).tensor(out);
    CHECK(c.run("aten::permute_copy.out") == PTERON_OK);
    CHECK(close_to(out, kPermute));
  }
  {  // permute_copy: repeated and out-of-range dims are errors
    Tensor x(PTERON_DTYPE_FLOAT32, {2, 3}), out(PTERON_DTYPE_FLOAT32, {3, 2});
    Call c1, c2;
    c1.tensor(x).ints({1, 1}).tensor(out);
    CHECK(c1.run("aten::permute_copy.out") == PTERON_ERROR_INVALID_ARGUMENT);
    c2.tensor(x).ints({0, 5}).tensor(out);
    CHECK(c2.run("aten::permute_copy.out") == PTERON_ERROR_INVALID_ARGUMENT);
    CHECK(mentions(c2, "5"));
  }
  {  // view_copy of a channels-last input with -1
    Tensor x(PTERON_DTYPE_FLOAT32, {1, 2, 2, 3}, {0, 2, 3, 1}), out(PTERON_DTYPE_FLOAT32, {2, 6});
    x.fill(Inp(12));
    Call c;
    c.tensor(x).ints({-1, 6}).tensor(out);
    CHECK(c.run("aten::view_copy.out") == PTERON_OK);
    CHECK(close_to(out, kView));
    Call bad1, bad2, bad3;
    bad1.tensor(x).ints({-1, -1}).tensor(out);
    CHECK(bad1.run("aten::view_copy.out") == PTERON_ERROR_INVALID_ARGUMENT);
    bad2.tensor(x).ints({5, -7}).tensor(out);
    CHECK(bad2.run("aten::view_copy.out") == PTERON_ERROR_INVALID_ARGUMENT);
    bad3.tensor(x).ints({5, 2}).tensor(out);
    CHECK(bad3.run("aten::view_copy.out") == PTERON_ERROR_SHAPE_MISMATCH);
  }
  {  // expand_copy with -1 and a new leading dim
    Tensor x(PTERON_DTYPE_FLOAT32, {3, 1}), out(PTERON_DTYPE_FLOAT32, {2, 3, 4});
    x.fill(Inp(3));
    Call c;
    c.tensor(x).ints({2, -1, 4}).b(false).tensor(out);
    CHECK(c.run("aten::expand_copy.out") == PTERON_OK);
    CHECK(close_to(out, kExpand));
    Call bad;
    bad.tensor(x).ints({-1, 3, 4}).b(false).tensor(out);
    CHECK(bad.run("aten::expand_copy.out") == PTERON_ERROR_INVALID_ARGUMENT);
    Call bad2;
    bad2.tensor(x).ints({2, 5, 4}).b(false).tensor(out);
    CHECK(bad2.run("aten::expand_copy.out") == PTERON_ERROR_SHAPE_MISMATCH);
  }
  {  // slice_copy with negative start and clamped end, step 2
    Tensor x(PTERON_DTYPE_FLOAT32, {4, 6}), out(PTERON_DTYPE_FLOAT32, {4, 3});
    x.fill(Inp(24));
    Call c;
    c.tensor(x).i(1).i(-5).i(100).i(2).tensor(out);
    CHECK(c.run("aten::slice_copy.Tensor_out") == PTERON_OK);
    CHECK(out.shape_is({4, 3}));
    CHECK(close_to(out, kSlice));
    Call c2;  // None start/end, huge step -> one element per row
    Tensor out2(PTERON_DTYPE_FLOAT32, {4, 1});
    c2.tensor(x).i(1).none().none().i(INT64_MAX).tensor(out2);
    CHECK(c2.run("aten::slice_copy.Tensor_out") == PTERON_OK);
    CHECK(out2.get(1) == x.get(6));
    Call bad;
    bad.tensor(x).i(1).i(0).i(3).i(0).tensor(out);
    CHECK(bad.run("aten::slice_copy.Tensor_out") == PTERON_ERROR_INVALID_ARGUMENT);
    Call empty;  // start past end -> empty (needs a resizable out)
    Tensor out3(PTERON_DTYPE_FLOAT32, {4, 0}, {}, 4);
    empty.tensor(x).i(1).i(5).i(2).i(1).tensor(out3);
    CHECK(empty.run("aten::slice_copy.Tensor_out") == PTERON_OK);
    CHECK(out3.shape_is({4, 0}));
  }
  {  // select_copy with negative dim and index; out-of-range index names it
    Tensor x(PTERON_DTYPE_FLOAT32, {2, 3, 4}), out(PTERON_DTYPE_FLOAT32, {2, 4});
    x.fill(Inp(24));
    Call c;
    c.tensor(x).i(-2).i(-1).tensor(out);
    CHECK(c.run("aten::select_copy.int_out") == PTERON_OK);
    CHECK(close_to(out, kSelect));
    Call bad;
    bad.tensor(x).i(1).i(3).tensor(out);
    CHECK(bad.run("aten::select_copy.int_out") == PTERON_ERROR_INVALID_ARGUMENT);
    CHECK(mentions(bad, "index 3"));
    CHECK(mentions(bad, "size 3"));
  }
  {  // squeeze_copy.dims_out / unsqueeze_copy
    Tensor x(PTERON_DTYPE_INT64, {2, 1, 3, 1}), out(PTERON_DTYPE_INT64, {2, 3, 1});
    x.fill({1, 2, 3, 4, 5, 6});
    Call c;
    c.tensor(x).ints({-3}).tensor(out);  // -3 is dim 1; dim 3 stays
    CHECK(c.run("aten::squeeze_copy.dims_out") == PTERON_OK);
    CHECK(out.shape_is({2, 3, 1}));
    CHECK(out.get(5) == 6);
    Call dup;
    dup.tensor(x).ints({1, -3}).tensor(out);
    CHECK(dup.run("aten::squeeze_copy.dims_out") == PTERON_ERROR_INVALID_ARGUMENT);
    Tensor u(PTERON_DTYPE_INT64, {2, 3, 1, 1});
    Call c2;
    c2.tensor(out).i(-2).tensor(u);
    CHECK(c2.run("aten::unsqueeze_copy.out") == PTERON_OK);
    CHECK(u.shape_is({2, 3, 1, 1}) && u.get(4) == 5);
    Call bad;
    bad.tensor(out).i(4).tensor(u);
    CHECK(bad.run("aten::unsqueeze_copy.out") == PTERON_ERROR_INVALID_ARGUMENT);
  }
  {  // cat: int32 + legacy empty 1-D float + int64 into float32 out
    Tensor a(PTERON_DTYPE_INT32, {2, 2}), e(PTERON_DTYPE_FLOAT32, {0}),
        b(PTERON_DTYPE_INT64, {2, 1});
    a.fill({1, 2, 3, 4});
    b.fill({5, 6});
    Tensor out(PTERON_DTYPE_FLOAT32, {2, 3});
    Call c;
    c.tensors({&a, &e, &b}).i(1).tensor(out);
    CHECK(c.run("aten::cat.out") == PTERON_OK);
    CHECK(close_to(out, kCat));
    // float inputs into an int out: can't cast
    Tensor f(PTERON_DTYPE_FLOAT32, {2, 1}), iout(PTERON_DTYPE_INT64, {2, 3});
    Call bad;
    bad.tensors({&a, &f}).i(1).tensor(iout);
    CHECK(bad.run("aten::cat.out") == PTERON_ERROR_INVALID_ARGUMENT);
    Call bad2;  // size mismatch off the cat dim
    Tensor g(PTERON_DTYPE_INT32, {3, 1});
    bad2.tensors({&a, &g}).i(1).tensor(out);
    CHECK(bad2.run("aten::cat.out") == PTERON_ERROR_SHAPE_MISMATCH);
    Call bad3;  // None entry
    bad3.tensors({&a, nullptr}).i(1).tensor(out);
    CHECK(bad3.run("aten::cat.out") == PTERON_ERROR_INVALID_PROGRAM);
  }
  {  // cat along dim 0 into a channels-last out
    Tensor a(PTERON_DTYPE_FLOAT32, {1, 2, 2, 2}), b(PTERON_DTYPE_FLOAT32, {1, 2, 2, 2});
    a.fill(Inp(8));
    b.fill(Inp(8, 11, 3, 5));
    Tensor out(PTERON_DTYPE_FLOAT32, {2, 2, 2, 2}, {0, 2, 3, 1});
    Call c;
    c.tensors({&a, &b}).i(0).tensor(out);
    CHECK(c.run("aten::cat.out") == PTERON_OK);
    bool ok = true;
    for (int i = 0; i < 8; ++i) ok = ok && out.get(i) == a.get(i) && out.get(8 + i) == b.get(i);
    CHECK(ok);
  }
  {  // clone into channels-last; _to_dim_order_copy converting dtypes
    Tensor x(PTERON_DTYPE_FLOAT32, {1, 3, 2, 2}),
        out(PTERON_DTYPE_FLOAT32, {1, 3, 2, 2}, {0, 2, 3, 1});
    x.fill(Inp(12));
    Call c;
    c.tensor(x).none().tensor(out);
    CHECK(c.run("aten::clone.out") == PTERON_OK);
    bool ok = true;
    for (int i = 0; i < 12; ++i) ok = ok && out.get(i) == x.get(i);
    CHECK(ok);
    // storage really is channels-last: element (0,1,0,0) sits at offset 1
    CHECK(static_cast<float*>(out.t.data)[1] == static_cast<float>(x.get(4)));

    Tensor back(PTERON_DTYPE_FLOAT32, {1, 3, 2, 2});
    Call c2;
    c2.tensor(out).b(false).ints({0, 1, 2, 3}).tensor(back);
    CHECK(c2.run("dim_order_ops::_to_dim_order_copy.out") == PTERON_OK);
    ok = true;
    for (int i = 0; i < 12; ++i) ok = ok && back.get(i) == x.get(i);
    CHECK(ok);
    Call bad;  // dim_order disagrees with the out tensor's declared order
    bad.tensor(x).b(false).ints({0, 2, 3, 1}).tensor(back);
    CHECK(bad.run("dim_order_ops::_to_dim_order_copy.out") == PTERON_ERROR_INVALID_PROGRAM);
    Call bad2;
    bad2.tensor(x).b(false).ints({0, 0, 3, 1}).tensor(out);
    CHECK(bad2.run("dim_order_ops::_clone_dim_order.out") == PTERON_ERROR_INVALID_ARGUMENT);

    Tensor f(PTERON_DTYPE_FLOAT32, {4}), u8(PTERON_DTYPE_UINT8, {4}), i32(PTERON_DTYPE_INT32, {4});
    f.fill({-1.0, 300.0, -3.7, 2.5});
    Call c3, c4;
    c3.tensor(f).b(false).none().tensor(u8);
    CHECK(c3.run("dim_order_ops::_to_dim_order_copy.out") == PTERON_OK);
    CHECK(equal_to(u8, kToU8));
    c4.tensor(f).b(false).none().tensor(i32);
    CHECK(c4.run("dim_order_ops::_to_dim_order_copy.out") == PTERON_OK);
    CHECK(equal_to(i32, kToI32));
    // NaN and out-of-range floats: PyTorch's x86 values, from float32 and float64
    for (int32_t from : {PTERON_DTYPE_FLOAT32, PTERON_DTYPE_FLOAT64}) {
      Tensor src(from, {6});
      src.fill({NAN, 1e20, -1e20, 3e9, 2.7, -70000.5});
      const std::pair<int32_t, const int64_t*> targets[] = {{PTERON_DTYPE_INT32, kNanToI32},
                                                            {PTERON_DTYPE_INT64, kNanToI64},
                                                            {PTERON_DTYPE_INT16, kNanToI16},
                                                            {PTERON_DTYPE_INT8, kNanToI8},
                                                            {PTERON_DTYPE_UINT8, kNanToU8}};
      for (const auto& tg : targets) {
        Tensor dst(tg.first, {6});
        Call cv;
        cv.tensor(src).b(false).none().tensor(dst);
        CHECK(cv.run("dim_order_ops::_to_dim_order_copy.out") == PTERON_OK);
        bool same = true;
        for (int64_t i = 0; i < 6; ++i)
          same = same && dst.get(i) == static_cast<double>(tg.second[i]);
        CHECK(same);
      }
    }
    Call c5;  // _clone_dim_order keeps the dtype
    c5.tensor(f).b(false).none().tensor(i32);
    CHECK(c5.run("dim_order_ops::_clone_dim_order.out") == PTERON_ERROR_INVALID_ARGUMENT);
    // bool storage holding a byte other than 0/1 (malformed program) reads
    // as true, without undefined behaviour
    Tensor bb(PTERON_DTYPE_BOOL, {2}), bf(PTERON_DTYPE_FLOAT32, {2});
    static_cast<uint8_t*>(bb.t.data)[0] = 74;
    static_cast<uint8_t*>(bb.t.data)[1] = 0;
    Call cb;
    cb.tensor(bb).b(false).none().tensor(bf);
    CHECK(cb.run("dim_order_ops::_to_dim_order_copy.out") == PTERON_OK);
    CHECK(bf.get(0) == 1.0 && bf.get(1) == 0.0);
    // 0-dim int64 -> float32 (as in an exported scalar constant)
    Tensor s(PTERON_DTYPE_INT64, {}), sf(PTERON_DTYPE_FLOAT32, {});
    s.fill({7});
    Call c6;
    c6.tensor(s).b(false).ints({}).tensor(sf).tensor(sf);
    CHECK(c6.run("dim_order_ops::_to_dim_order_copy.out") == PTERON_OK);
    CHECK(sf.get(0) == 7.0);
  }
}

static void test_index_ops() {
  {
    Tensor x(PTERON_DTYPE_FLOAT32, {3, 4}), idx(PTERON_DTYPE_INT32, {3}),
        out(PTERON_DTYPE_FLOAT32, {3, 3});
    x.fill(Inp(12));
    idx.fill({3, 0, 3});
    Call c;
    c.tensor(x).i(1).tensor(idx).tensor(out);
    CHECK(c.run("aten::index_select.out") == PTERON_OK);
    CHECK(close_to(out, kIndexSelect));
    idx.fill({3, 4, 0});
    Call bad;
    bad.tensor(x).i(1).tensor(idx).tensor(out);
    CHECK(bad.run("aten::index_select.out") == PTERON_ERROR_INVALID_ARGUMENT);
    CHECK(mentions(bad, "index 4"));
    CHECK(mentions(bad, "size 4"));
    idx.fill({-1, 0, 0});
    Call neg;
    neg.tensor(x).i(1).tensor(idx).tensor(out);
    CHECK(neg.run("aten::index_select.out") == PTERON_ERROR_INVALID_ARGUMENT);
    CHECK(mentions(neg, "-1"));
  }
  {
    Tensor w(PTERON_DTYPE_FLOAT32, {5, 3}), ids(PTERON_DTYPE_INT64, {2, 2}),
        out(PTERON_DTYPE_FLOAT32, {2, 2, 3});
    w.fill(Inp(15));
    ids.fill({4, 0, 2, 2});
    Call c;
    c.tensor(w).tensor(ids).i(-1).b(false).b(false).tensor(out).tensor(out);
    CHECK(c.run("aten::embedding.out") == PTERON_OK);
    CHECK(close_to(out, kEmbedding));
    ids.fill({4, 0, 5, 2});
    Call bad;
    bad.tensor(w).tensor(ids).i(-1).b(false).b(false).tensor(out);
    CHECK(bad.run("aten::embedding.out") == PTERON_ERROR_INVALID_ARGUMENT);
    CHECK(mentions(bad, "index 5"));
    CHECK(mentions(bad, "5 rows"));
  }
  {  // full_like: float value into an int out truncates; overflow is an error
    Tensor x(PTERON_DTYPE_FLOAT32, {2, 3}), out(PTERON_DTYPE_INT64, {2, 3});
    Call c;
    c.tensor(x).d(2.7).none().tensor(out);
    CHECK(c.run("aten::full_like.out") == PTERON_OK);
    CHECK(out.get(5) == 2);
    Tensor u8(PTERON_DTYPE_UINT8, {2, 3});
    Call bad;
    bad.tensor(x).i(300).none().tensor(u8);
    CHECK(bad.run("aten::full_like.out") == PTERON_ERROR_INVALID_ARGUMENT);
    CHECK(mentions(bad, "300"));
    Call wrap;  // c10 accepts -1 for uint8 (wraps to 255)
    wrap.tensor(x).i(-1).i(1).tensor(u8);
    CHECK(wrap.run("aten::full_like.out") == PTERON_OK);
    CHECK(u8.get(0) == 255);
    Tensor f(PTERON_DTYPE_FLOAT32, {2, 3});
    Call c2;
    c2.tensor(x).d(-1e9).none().tensor(f);
    CHECK(c2.run("aten::full_like.out") == PTERON_OK);
    CHECK(f.get(3) == -1e9f);
    Call nanint;
    nanint.tensor(x).d(NAN).none().tensor(out);
    CHECK(nanint.run("aten::full_like.out") == PTERON_ERROR_INVALID_ARGUMENT);
    Call z;
    z.tensor(x).none().tensor(f);
    CHECK(z.run("aten::zeros_like.out") == PTERON_OK);
    CHECK(f.get(3) == 0.0);
  }
}

static void test_conv() {
  {  // grouped 2-D convolution with stride, padding and bias
    Tensor x(PTERON_DTYPE_FLOAT32, {1, 2, 5, 5}), w(PTERON_DTYPE_FLOAT32, {4, 1, 3, 3}),
        b(PTERON_DTYPE_FLOAT32, {4}), out(PTERON_DTYPE_FLOAT32, {1, 4, 3, 3});
    x.fill(Inp(50));
    w.fill(Inp(36, 5, 3, 2, 0.5));
    b.fill({0.5, -1.0, 0.25, 2.0});
    Call c;
    c.tensor(x)
        .tensor(w)
        .tensor(b)
        .ints({2, 2})
        .ints({1, 1})
        .ints({1, 1})
        .b(false)
        .ints({0, 0})
        .i(2)
        .tensor(out)
        .tensor(out);
    CHECK(c.run("aten::convolution.out") == PTERON_OK);
    CHECK(close_to(out, kConv2d));
    // the same with channels-last input and out
    Tensor xc(PTERON_DTYPE_FLOAT32, {1, 2, 5, 5}, {0, 2, 3, 1}),
        oc(PTERON_DTYPE_FLOAT32, {1, 4, 3, 3}, {0, 2, 3, 1});
    xc.fill(Inp(50));
    Call c2;
    c2.tensor(xc).tensor(w).tensor(b).ints({2}).ints({1}).ints({1}).b(false).ints({0}).i(2).tensor(
        oc);
    CHECK(c2.run("aten::convolution.out") == PTERON_OK);
    CHECK(close_to(oc, kConv2d));
    Call tr;
    tr.tensor(x)
        .tensor(w)
        .tensor(b)
        .ints({2, 2})
        .ints({1, 1})
        .ints({1, 1})
        .b(true)
        .ints({0, 0})
        .i(2)
        .tensor(out);
    // transposed convolution is computed (its values: tests/ops/cases/remaining.py)
    CHECK(tr.run("aten::convolution.out") != PTERON_ERROR_NOT_SUPPORTED);
    Call g3;
    g3.tensor(x)
        .tensor(w)
        .tensor(b)
        .ints({2, 2})
        .ints({1, 1})
        .ints({1, 1})
        .b(false)
        .ints({0, 0})
        .i(3)
        .tensor(out);
    CHECK(g3.run("aten::convolution.out") == PTERON_ERROR_SHAPE_MISMATCH);
    Call g0;
    g0.tensor(x)
        .tensor(w)
        .tensor(b)
        .ints({2, 2})
        .ints({1, 1})
        .ints({1, 1})
        .b(false)
        .ints({0, 0})
        .i(0)
        .tensor(out);
    CHECK(g0.run("aten::convolution.out") == PTERON_ERROR_INVALID_ARGUMENT);
    Call s0;
    s0.tensor(x)
        .tensor(w)
        .tensor(b)
        .ints({0, 2})
        .ints({1, 1})
        .ints({1, 1})
        .b(false)
        .ints({0, 0})
        .i(2)
        .tensor(out);
    CHECK(s0.run("aten::convolution.out") == PTERON_ERROR_INVALID_ARGUMENT);
    Call big;  // kernel larger than the padded input
    Tensor wb(PTERON_DTYPE_FLOAT32, {4, 1, 9, 9});
    big.tensor(x).tensor(wb).none().ints({1}).ints({0}).ints({1}).b(false).ints({0}).i(2).tensor(
        out);
    CHECK(big.run("aten::convolution.out") == PTERON_ERROR_SHAPE_MISMATCH);
  }
  {  // 1-D convolution with dilation, no bias
    Tensor x(PTERON_DTYPE_FLOAT32, {2, 3, 7}), w(PTERON_DTYPE_FLOAT32, {2, 3, 3}),
        out(PTERON_DTYPE_FLOAT32, {2, 2, 7});
    x.fill(Inp(42));
    w.fill(Inp(18, 7, 2, 3, 0.5));
    Call c;
    c.tensor(x).tensor(w).none().ints({1}).ints({2}).ints({2}).b(false).ints({0}).i(1).tensor(out);
    CHECK(c.run("aten::convolution.out") == PTERON_OK);
    CHECK(close_to(out, kConv1d));
  }
  {  // int64 convolution
    Tensor x(PTERON_DTYPE_INT64, {2, 3, 4, 4}), w(PTERON_DTYPE_INT64, {5, 3, 2, 2}),
        b(PTERON_DTYPE_INT64, {5}), out(PTERON_DTYPE_INT64, {2, 5, 3, 3});
    std::vector<double> xv(96), wv(60);
    for (int i = 0; i < 96; ++i) xv[i] = i % 7 - 3;
    for (int i = 0; i < 60; ++i) wv[i] = i % 5 - 2;
    x.fill(xv);
    w.fill(wv);
    b.fill({1, 2, 3, 4, 5});
    Call c;
    c.tensor(x)
        .tensor(w)
        .tensor(b)
        .ints({1, 2})
        .ints({0, 1})
        .ints({1, 1})
        .b(false)
        .ints({0, 0})
        .i(1)
        .tensor(out);
    CHECK(c.run("aten::convolution.out") == PTERON_OK);
    CHECK(equal_to(out, kConvInt));
  }
}

static void test_pool() {
  {
    Tensor x(PTERON_DTYPE_FLOAT32, {1, 2, 5, 5}), out(PTERON_DTYPE_FLOAT32, {1, 2, 3, 3}),
        idx(PTERON_DTYPE_INT64, {1, 2, 3, 3});
    x.fill(Inp(50, 17, 5, 8));
    Call c;
    c.tensor(x)
        .ints({3, 3})
        .ints({2, 2})
        .ints({1, 1})
        .ints({1, 1})
        .b(true)
        .tensor(out)
        .tensor(idx)
        .tensors({&out, &idx});
    CHECK(c.run("aten::max_pool2d_with_indices.out") == PTERON_OK);
    CHECK(close_to(out, kMaxPool));
    CHECK(equal_to(idx, kMaxPoolIdx));
    // 3-D input, empty stride (= kernel), dilation 2
    Tensor x3(PTERON_DTYPE_FLOAT32, {2, 5, 5}), o3(PTERON_DTYPE_FLOAT32, {2, 2, 2}),
        i3(PTERON_DTYPE_INT64, {2, 2, 2});
    x3.fill(Inp(50, 17, 5, 8));
    Call c3;
    c3.tensor(x3).ints({2, 2}).ints({}).ints({0}).ints({2}).b(false).tensor(o3).tensor(i3);
    CHECK(c3.run("aten::max_pool2d_with_indices.out") == PTERON_OK);
    CHECK(close_to(o3, kMaxPoolDil));
    CHECK(equal_to(i3, kMaxPoolDilIdx));
    {  // windows holding only padding (dilation 2 along W): torch gives
       // -inf and the first adjusted position, here [1, 1, 2, 3, 4] for
       // aten.max_pool2d_with_indices(arange(5.).view(1,1,5,1), [3,3], [1,3],
       //                              [1,1], [1,2], True)
      Tensor xa(PTERON_DTYPE_FLOAT32, {1, 1, 5, 1}), oa(PTERON_DTYPE_FLOAT32, {1, 1, 5, 1}),
          ia(PTERON_DTYPE_INT64, {1, 1, 5, 1});
      xa.fill({0, 1, 2, 3, 4});
      Call ca;
      ca.tensor(xa).ints({3, 3}).ints({1, 3}).ints({1, 1}).ints({1, 2}).b(true).tensor(oa).tensor(
          ia);
      CHECK(ca.run("aten::max_pool2d_with_indices.out") == PTERON_OK);
      const int64_t want_idx[] = {1, 1, 2, 3, 4};
      CHECK(equal_to(ia, want_idx));
      CHECK(std::isinf(oa.get(0)) && oa.get(0) < 0);
    }
    Call pad;
    pad.tensor(x).ints({3, 3}).ints({2, 2}).ints({2, 2}).ints({1, 1}).b(true).tensor(out).tensor(
        idx);
    CHECK(pad.run("aten::max_pool2d_with_indices.out") == PTERON_ERROR_INVALID_ARGUMENT);
    Call small;
    small.tensor(x).ints({7, 7}).ints({}).ints({0, 0}).ints({1, 1}).b(false).tensor(out).tensor(
        idx);
    CHECK(small.run("aten::max_pool2d_with_indices.out") == PTERON_ERROR_SHAPE_MISMATCH);
  }
  {
    Tensor x(PTERON_DTYPE_FLOAT32, {1, 2, 5, 5}), out(PTERON_DTYPE_FLOAT32, {1, 2, 3, 3});
    x.fill(Inp(50, 17, 5, 8));
    Call c;
    c.tensor(x).ints({3, 3}).ints({2, 2}).ints({1, 1}).b(true).b(false).none().tensor(out).tensor(
        out);
    CHECK(c.run("aten::avg_pool2d.out") == PTERON_OK);
    CHECK(close_to(out, kAvgPoolExcl));
    Call c2;
    c2.tensor(x).ints({3, 3}).ints({2, 2}).ints({1, 1}).b(true).b(true).none().tensor(out);
    CHECK(c2.run("aten::avg_pool2d.out") == PTERON_OK);
    CHECK(close_to(out, kAvgPoolIncl));
    // channels-last input, divisor_override
    Tensor xc(PTERON_DTYPE_FLOAT32, {1, 2, 5, 5}, {0, 2, 3, 1}),
        o2(PTERON_DTYPE_FLOAT32, {1, 2, 2, 2});
    xc.fill(Inp(50, 17, 5, 8));
    Call c3;
    c3.tensor(xc).ints({2, 2}).ints({}).ints({0, 0}).b(false).b(true).i(3).tensor(o2);
    CHECK(c3.run("aten::avg_pool2d.out") == PTERON_OK);
    CHECK(close_to(o2, kAvgPoolDiv));
    Call z;
    z.tensor(xc).ints({2, 2}).ints({}).ints({0, 0}).b(false).b(true).i(0).tensor(o2);
    CHECK(z.run("aten::avg_pool2d.out") == PTERON_ERROR_INVALID_ARGUMENT);
    Tensor xi(PTERON_DTYPE_INT32, {1, 2, 5, 5}), oi(PTERON_DTYPE_INT32, {1, 2, 2, 2});
    Call dt;
    dt.tensor(xi).ints({2, 2}).ints({}).ints({0, 0}).b(false).b(true).none().tensor(oi);
    CHECK(dt.run("aten::avg_pool2d.out") == PTERON_ERROR_UNSUPPORTED_DTYPE);
  }
}

static void test_norm() {
  {
    Tensor x(PTERON_DTYPE_FLOAT32, {2, 3, 2, 2}), w(PTERON_DTYPE_FLOAT32, {3}),
        b(PTERON_DTYPE_FLOAT32, {3}), m(PTERON_DTYPE_FLOAT32, {3}), v(PTERON_DTYPE_FLOAT32, {3}),
        out(PTERON_DTYPE_FLOAT32, {2, 3, 2, 2}),
        o1(PTERON_DTYPE_FLOAT32, {0}, {}, 0, PTERON_SHAPE_STATIC),
        o2(PTERON_DTYPE_FLOAT32, {0}, {}, 0, PTERON_SHAPE_STATIC);
    x.fill(Inp(24, 11, 3, 5));
    w.fill({1.5, -0.5, 2.0});
    b.fill({0.1, 0.2, -0.3});
    m.fill({0.25, -0.5, 1.0});
    v.fill({1.0, 0.5, 2.0});
    Call c;
    c.tensor(x)
        .tensor(w)
        .tensor(b)
        .tensor(m)
        .tensor(v)
        .d(0.1)
        .d(1e-5)
        .tensor(out)
        .tensor(o1)
        .tensor(o2)
        .tensors({&out, &o1, &o2});
    CHECK(c.run("aten::_native_batch_norm_legit_no_training.out") == PTERON_OK);
    CHECK(close_to(out, kBatchNorm));
    // channels-last input and out give the same values
    Tensor xc(PTERON_DTYPE_FLOAT32, {2, 3, 2, 2}, {0, 2, 3, 1}),
        oc(PTERON_DTYPE_FLOAT32, {2, 3, 2, 2}, {0, 2, 3, 1});
    xc.fill(Inp(24, 11, 3, 5));
    Tensor d1(PTERON_DTYPE_FLOAT32, {3}), d2(PTERON_DTYPE_FLOAT32, {3});
    Call c2;
    c2.tensor(xc)
        .tensor(w)
        .tensor(b)
        .tensor(m)
        .tensor(v)
        .d(0.1)
        .d(1e-5)
        .tensor(oc)
        .tensor(d1)
        .tensor(d2);
    CHECK(c2.run("aten::_native_batch_norm_legit_no_training.out") == PTERON_OK);
    CHECK(close_to(oc, kBatchNorm));
    CHECK(d1.numel() == 0);  // bounded save_mean becomes empty, as ATen returns
    Tensor m4(PTERON_DTYPE_FLOAT32, {4});
    Call bad;
    bad.tensor(x)
        .tensor(w)
        .tensor(b)
        .tensor(m4)
        .tensor(v)
        .d(0.1)
        .d(1e-5)
        .tensor(out)
        .tensor(o1)
        .tensor(o2);
    CHECK(bad.run("aten::_native_batch_norm_legit_no_training.out") == PTERON_ERROR_SHAPE_MISMATCH);
    Tensor md(PTERON_DTYPE_FLOAT64, {3});
    Call mixed;
    mixed.tensor(x)
        .tensor(w)
        .tensor(b)
        .tensor(md)
        .tensor(v)
        .d(0.1)
        .d(1e-5)
        .tensor(out)
        .tensor(o1)
        .tensor(o2);
    CHECK(mixed.run("aten::_native_batch_norm_legit_no_training.out") ==
          PTERON_ERROR_INVALID_ARGUMENT);
  }
  {
    Tensor x(PTERON_DTYPE_FLOAT32, {2, 3, 4}), w(PTERON_DTYPE_FLOAT32, {3, 4}),
        b(PTERON_DTYPE_FLOAT32, {3, 4}), out(PTERON_DTYPE_FLOAT32, {2, 3, 4}),
        mean(PTERON_DTYPE_FLOAT32, {2, 1, 1}), rstd(PTERON_DTYPE_FLOAT32, {2, 1, 1});
    x.fill(Inp(24, 11, 4, 5));
    w.fill(Inp(12, 5, 2, 1, 0.5));
    b.fill(Inp(12, 3, 1, 1, 0.1));
    Call c;
    c.tensor(x)
        .ints({3, 4})
        .tensor(w)
        .tensor(b)
        .d(1e-5)
        .tensor(out)
        .tensor(mean)
        .tensor(rstd)
        .tensors({&out, &mean, &rstd});
    CHECK(c.run("aten::native_layer_norm.out") == PTERON_OK);
    CHECK(close_to(out, kLayerNorm));
    CHECK(close_to(mean, kLayerNormMean));
    CHECK(close_to(rstd, kLayerNormRstd));
    Tensor o1(PTERON_DTYPE_FLOAT32, {2, 3, 4}), m1(PTERON_DTYPE_FLOAT32, {2, 3, 1}),
        r1(PTERON_DTYPE_FLOAT32, {2, 3, 1});
    Call c1;
    c1.tensor(x).ints({4}).none().none().d(1e-5).tensor(o1).tensor(m1).tensor(r1);
    CHECK(c1.run("aten::native_layer_norm.out") == PTERON_OK);
    CHECK(close_to(o1, kLayerNorm1));
    CHECK(close_to(r1, kLayerNorm1Rstd));
    // a non-contiguous input (dim order 1,0,2) gives the same result
    Tensor xp(PTERON_DTYPE_FLOAT32, {2, 3, 4}, {1, 0, 2});
    xp.fill(Inp(24, 11, 4, 5));
    Call c2;
    c2.tensor(xp).ints({4}).none().none().d(1e-5).tensor(o1).tensor(m1).tensor(r1);
    CHECK(c2.run("aten::native_layer_norm.out") == PTERON_OK);
    CHECK(close_to(o1, kLayerNorm1));
    Call bad;
    bad.tensor(x).ints({5}).none().none().d(1e-5).tensor(o1).tensor(m1).tensor(r1);
    CHECK(bad.run("aten::native_layer_norm.out") == PTERON_ERROR_SHAPE_MISMATCH);
    Call bad2;
    bad2.tensor(x).ints({}).none().none().d(1e-5).tensor(o1).tensor(m1).tensor(r1);
    CHECK(bad2.run("aten::native_layer_norm.out") == PTERON_ERROR_INVALID_ARGUMENT);
  }
}

// Malformed programs: wrong arity, wrong tags, storage smaller than the
// shape, unsupported dtypes. Each must be an error, never a crash.
static void test_malformed() {
  Tensor x(PTERON_DTYPE_FLOAT32, {2, 3}), out(PTERON_DTYPE_FLOAT32, {3, 2});
  {
    Call c;
    c.tensor(x).ints({1, 0});
    CHECK(c.run("aten::permute_copy.out") == PTERON_ERROR_INVALID_PROGRAM);
  }
  {
    Call c;
    c.tensor(x).i(3).tensor(out);
    CHECK(c.run("aten::permute_copy.out") == PTERON_ERROR_INVALID_PROGRAM);
  }
  {
    Tensor lying(PTERON_DTYPE_FLOAT32, {2, 3});
    lying.t.sizes[1] = 1000;  // claims more elements than its storage holds
    Call c;
    c.tensor(lying).ints({1, 0}).tensor(out);
    CHECK(c.run("aten::permute_copy.out") == PTERON_ERROR_INVALID_PROGRAM);
    Tensor neg(PTERON_DTYPE_FLOAT32, {2, 3});
    neg.t.sizes[0] = -4;
    Call c2;
    c2.tensor(neg).i(0).tensor(out);
    CHECK(c2.run("aten::select_copy.int_out") != PTERON_OK);
    Tensor nodata(PTERON_DTYPE_FLOAT32, {2, 3});
    nodata.t.data = nullptr;
    Call c3;
    c3.tensor(nodata).none().tensor(out);
    CHECK(c3.run("aten::clone.out") == PTERON_ERROR_INVALID_PROGRAM);
  }
  {
    Tensor h(PTERON_DTYPE_FLOAT16, {2, 3}), ho(PTERON_DTYPE_FLOAT16, {3, 2});
    Call c;
    c.tensor(h).ints({1, 0}).tensor(ho);
    // copies and convolution take float16 (tests/ops/cases/half.py, half_more.py); bool is
    // refused
    CHECK(c.run("aten::permute_copy.out") == PTERON_OK);
    Tensor hw(PTERON_DTYPE_BOOL, {1, 1, 1, 1}), hx(PTERON_DTYPE_BOOL, {1, 1, 2, 2}),
        hout(PTERON_DTYPE_BOOL, {1, 1, 2, 2});
    Call c2;
    c2.tensor(hx).tensor(hw).none().ints({1}).ints({0}).ints({1}).b(false).ints({0}).i(1).tensor(
        hout);
    CHECK(c2.run("aten::convolution.out") == PTERON_ERROR_UNSUPPORTED_DTYPE);
    CHECK(mentions(c2, "bool"));
  }
  {  // static out of the wrong shape
    Tensor so(PTERON_DTYPE_FLOAT32, {2, 2}, {}, -1, PTERON_SHAPE_STATIC);
    Call c;
    c.tensor(x).ints({1, 0}).tensor(so);
    CHECK(c.run("aten::permute_copy.out") == PTERON_ERROR_SHAPE_MISMATCH);
  }
  {  // huge padding / garbage parameters
    Tensor xi(PTERON_DTYPE_FLOAT32, {1, 1, 4, 4}), w(PTERON_DTYPE_FLOAT32, {1, 1, 2, 2}),
        o(PTERON_DTYPE_FLOAT32, {1, 1, 3, 3});
    Call c;
    c.tensor(xi)
        .tensor(w)
        .none()
        .ints({1})
        .ints({INT64_MAX})
        .ints({1})
        .b(false)
        .ints({0})
        .i(1)
        .tensor(o);
    CHECK(c.run("aten::convolution.out") == PTERON_ERROR_INVALID_ARGUMENT);
    Call c2;
    c2.tensor(xi)
        .tensor(w)
        .none()
        .ints({1})
        .ints({0})
        .ints({INT64_MIN})
        .b(false)
        .ints({0})
        .i(1)
        .tensor(o);
    CHECK(c2.run("aten::convolution.out") == PTERON_ERROR_INVALID_ARGUMENT);
    Tensor idx(PTERON_DTYPE_INT64, {1, 1, 3, 3});
    Call c3;
    c3.tensor(xi).ints({INT64_MAX, 1}).ints({}).ints({0}).ints({1}).b(true).tensor(o).tensor(idx);
    CHECK(c3.run("aten::max_pool2d_with_indices.out") == PTERON_ERROR_INVALID_ARGUMENT);
    Call c4;
    c4.tensor(x).i(INT64_MIN).i(INT64_MIN).i(INT64_MAX).i(1).tensor(out);
    CHECK(c4.run("aten::slice_copy.Tensor_out") == PTERON_ERROR_INVALID_ARGUMENT);
    Call c5;
    c5.tensor(x).ints({INT64_MAX, INT64_MAX}).tensor(out);
    CHECK(c5.run("aten::view_copy.out") == PTERON_ERROR_SHAPE_MISMATCH);
    Call c6;
    c6.tensor(x).ints({INT64_MAX, -1}).tensor(out);
    CHECK(c6.run("aten::view_copy.out") != PTERON_OK);
  }
}

// Random argument lists shaped roughly like each operator's schema (a few
// arguments of the wrong kind, extreme ints, odd dim orders, aliasing-free
// random tensors). Every call must return some status without tripping the
// sanitizers; nothing else is checked.
struct Rng {
  uint64_t s;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
};

static void test_random_arguments() {
  static const char* const kOps[][2] = {
      {"aten::permute_copy.out", "TLT"},
      {"aten::view_copy.out", "TLT"},
      {"aten::expand_copy.out", "TLBT"},
      {"aten::squeeze_copy.dims_out", "TLT"},
      {"aten::squeeze_copy.dim_out", "TIT"},
      {"aten::squeeze_copy.out", "TT"},
      {"aten::unsqueeze_copy.out", "TIT"},
      {"aten::select_copy.int_out", "TIIT"},
      {"aten::slice_copy.Tensor_out", "TIOOIT"},
      {"aten::cat.out", "XIT"},
      {"aten::clone.out", "TNT"},
      {"dim_order_ops::_to_dim_order_copy.out", "TBPT"},
      {"dim_order_ops::_clone_dim_order.out", "TBPT"},
      {"aten::index_select.out", "TIKT"},
      {"aten::embedding.out", "TKIBBT"},
      {"aten::full_like.out", "TDNT"},
      {"aten::zeros_like.out", "TNT"},
      {"aten::convolution.out", "TTQLLLBLIT"},
      {"aten::max_pool2d_with_indices.out", "TLLLLBTT"},
      {"aten::avg_pool2d.out", "TLLLBBOT"},
      {"aten::_native_batch_norm_legit_no_training.out", "TQQTTDDTTT"},
      {"aten::native_layer_norm.out", "TLQQDTTT"},
  };
  const int32_t dtypes[] = {PTERON_DTYPE_FLOAT32, PTERON_DTYPE_FLOAT32, PTERON_DTYPE_FLOAT64,
                            PTERON_DTYPE_INT64,   PTERON_DTYPE_INT32,   PTERON_DTYPE_UINT8,
                            PTERON_DTYPE_BOOL,    PTERON_DTYPE_INT8,    PTERON_DTYPE_INT16,
                            PTERON_DTYPE_FLOAT16};
  const int64_t extremes[] = {INT64_MIN, INT64_MAX, -1000000, 1000000, -(int64_t{1} << 40)};
  Rng rng{0x9E3779B97F4A7C15ull};
  auto small_int = [&]() -> int64_t {
    return rng.below(10) == 0 ? extremes[rng.below(5)] : rng.below(7) - 2;
  };
  auto make_tensor = [&](std::vector<std::unique_ptr<Tensor>>& pool, bool index) {
    const int32_t rank = static_cast<int32_t>(rng.below(5));
    std::vector<int64_t> sizes;
    for (int32_t i = 0; i < rank; ++i) sizes.push_back(rng.below(6) == 0 ? 0 : 1 + rng.below(4));
    std::vector<uint8_t> order;
    for (int32_t i = 0; i < rank; ++i) order.push_back(static_cast<uint8_t>(i));
    if (rank > 1 && rng.below(3) == 0)
      for (int32_t i = rank - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
    int32_t dt =
        index ? (rng.below(2) ? PTERON_DTYPE_INT64 : PTERON_DTYPE_INT32) : dtypes[rng.below(10)];
    const bool roomy = rng.below(2) == 0;
    pool.push_back(std::make_unique<Tensor>(
        dt, sizes, order, roomy ? 512 : -1,
        rng.below(4) == 0 ? PTERON_SHAPE_STATIC : PTERON_SHAPE_DYNAMIC_BOUND));
    Tensor& t = *pool.back();
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, index ? rng.below(5) : rng.below(9) - 4);
    return &t;
  };
  int ok = 0;
  for (int iter = 0; iter < 40000; ++iter) {
    const auto& op = kOps[rng.below(sizeof kOps / sizeof kOps[0])];
    std::vector<std::unique_ptr<Tensor>> pool;
    Call c;
    std::string kinds = op[1];
    if (rng.below(20) == 0) kinds.pop_back();
    if (rng.below(20) == 0) kinds.push_back('T');
    for (char k : kinds) {
      if (rng.below(25) == 0) k = "TILBDNX"[rng.below(7)];
      switch (k) {
        case 'T': c.tensor(*make_tensor(pool, false)); break;
        case 'K': c.tensor(*make_tensor(pool, rng.below(8) != 0)); break;
        case 'Q':
          if (rng.below(4) == 0)
            c.none();
          else
            c.tensor(*make_tensor(pool, false));
          break;
        case 'I': c.i(small_int()); break;
        case 'O':
          if (rng.below(3) == 0)
            c.none();
          else
            c.i(small_int());
          break;
        case 'B': c.b(rng.below(2) != 0); break;
        case 'D': {
          const double ds[] = {0.0, 1e-5, -2.5, 300.0, NAN, INFINITY, 1e300, 0.1};
          c.d(ds[rng.below(8)]);
          break;
        }
        case 'N':
          if (rng.below(4) == 0)
            c.i(small_int());
          else
            c.none();
          break;
        case 'L':
        case 'P': {
          if (k == 'P' && rng.below(3) == 0) {
            c.none();
            break;
          }
          std::vector<int64_t> v;
          const int64_t len = rng.below(5);
          for (int64_t j = 0; j < len; ++j) v.push_back(small_int());
          c.ints(v);
          break;
        }
        case 'X': {
          std::vector<Tensor*> v;
          const int64_t len = rng.below(4);
          for (int64_t j = 0; j < len; ++j)
            v.push_back(rng.below(15) == 0 ? nullptr : make_tensor(pool, false));
          c.tensors(v);
          break;
        }
        default: c.none(); break;
      }
    }
    const int32_t rc = c.run(op[0]);
    if (rc == PTERON_OK)
      ++ok;
    else
      CHECK(!c.ctx.message.empty());
  }
  std::printf("random arguments: %d of 40000 calls succeeded\n", ok);
}

// Random convolution and pooling geometries (1-D/2-D/3-D conv, groups,
// stride, padding, dilation, ceil_mode, random dim orders) checked against
// naive reference loops written from the definitions. The torch-derived
// cases above pin the semantics; this pins the index arithmetic.
static int64_t lin(const Tensor& t, const int64_t* idx) {
  int64_t i = 0;
  for (int32_t d = 0; d < t.t.dim; ++d) i = i * t.t.sizes[d] + idx[d];
  return i;
}

static std::vector<uint8_t> random_order(Rng& rng, int32_t rank) {
  std::vector<uint8_t> order;
  for (int32_t i = 0; i < rank; ++i) order.push_back(static_cast<uint8_t>(i));
  if (rng.below(2))
    for (int32_t i = rank - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
  return order;
}

static void test_conv_pool_random() {
  Rng rng{12345};
  int conv_runs = 0, pool_runs = 0;
  for (int iter = 0; iter < 300; ++iter) {
    const int32_t S = 1 + static_cast<int32_t>(rng.below(3));
    const int64_t groups = 1 + rng.below(3);
    const int64_t N = 1 + rng.below(2), cin_g = 1 + rng.below(2), cout_g = 1 + rng.below(2);
    int64_t in[3], k[3], st[3], pd[3], dl[3], o[3];
    bool valid = true;
    for (int32_t j = 0; j < S; ++j) {
      in[j] = 1 + rng.below(6);
      k[j] = 1 + rng.below(3);
      st[j] = 1 + rng.below(3);
      pd[j] = rng.below(3);
      dl[j] = 1 + rng.below(2);
      const int64_t ext = dl[j] * (k[j] - 1) + 1;
      if (in[j] + 2 * pd[j] < ext) valid = false;
      o[j] = (in[j] + 2 * pd[j] - ext) / st[j] + 1;
    }
    if (!valid) continue;
    std::vector<int64_t> xs{N, groups * cin_g}, ws{groups * cout_g, cin_g}, os{N, groups * cout_g};
    for (int32_t j = 0; j < S; ++j) {
      xs.push_back(in[j]);
      ws.push_back(k[j]);
      os.push_back(o[j]);
    }
    const int32_t dt = rng.below(2) ? PTERON_DTYPE_FLOAT32 : PTERON_DTYPE_FLOAT64;
    Tensor x(dt, xs, random_order(rng, S + 2)), w(dt, ws, random_order(rng, S + 2)),
        b(dt, {groups * cout_g}), out(dt, os, random_order(rng, S + 2));
    for (int64_t i = 0; i < x.numel(); ++i) x.set(i, static_cast<double>(rng.below(9)) - 4);
    for (int64_t i = 0; i < w.numel(); ++i) w.set(i, static_cast<double>(rng.below(7)) - 3);
    for (int64_t i = 0; i < b.numel(); ++i) b.set(i, static_cast<double>(rng.below(5)) - 2);
    const bool with_bias = rng.below(2);
    Call c;
    c.tensor(x).tensor(w);
    if (with_bias)
      c.tensor(b);
    else
      c.none();
    c.ints(std::vector<int64_t>(st, st + S))
        .ints(std::vector<int64_t>(pd, pd + S))
        .ints(std::vector<int64_t>(dl, dl + S))
        .b(false)
        .ints({0})
        .i(groups)
        .tensor(out);
    CHECK(c.run("aten::convolution.out") == PTERON_OK);
    // reference
    bool same = true;
    int64_t oidx[5] = {0}, iidx[5] = {0}, widx[5] = {0};
    const int64_t O0 = S > 2 ? o[S - 3] : 1, O1 = S > 1 ? o[S - 2] : 1, O2 = o[S - 1];
    const int64_t K0 = S > 2 ? k[S - 3] : 1, K1 = S > 1 ? k[S - 2] : 1, K2 = k[S - 1];
    for (int64_t n = 0; n < N; ++n)
      for (int64_t oc = 0; oc < groups * cout_g; ++oc)
        for (int64_t a0 = 0; a0 < O0; ++a0)
          for (int64_t a1 = 0; a1 < O1; ++a1)
            for (int64_t a2 = 0; a2 < O2; ++a2) {
              const int64_t oa[3] = {a0, a1, a2};
              double acc = with_bias ? b.get(oc) : 0.0;
              const int64_t g = oc / cout_g;
              for (int64_t ic = 0; ic < cin_g; ++ic)
                for (int64_t k0 = 0; k0 < K0; ++k0)
                  for (int64_t k1 = 0; k1 < K1; ++k1)
                    for (int64_t k2 = 0; k2 < K2; ++k2) {
                      const int64_t ka[3] = {k0, k1, k2};
                      bool inside = true;
                      iidx[0] = n;
                      iidx[1] = g * cin_g + ic;
                      widx[0] = oc;
                      widx[1] = ic;
                      for (int32_t j = 0; j < S; ++j) {
                        const int32_t slot = 3 - S + j;
                        const int64_t p = oa[slot] * st[j] - pd[j] + ka[slot] * dl[j];
                        if (p < 0 || p >= in[j]) inside = false;
                        iidx[2 + j] = p;
                        widx[2 + j] = ka[slot];
                      }
                      if (inside) acc += x.get(lin(x, iidx)) * w.get(lin(w, widx));
                    }
              oidx[0] = n;
              oidx[1] = oc;
              for (int32_t j = 0; j < S; ++j) oidx[2 + j] = oa[3 - S + j];
              if (std::fabs(out.get(lin(out, oidx)) - acc) > 1e-4 * (1 + std::fabs(acc)))
                same = false;
            }
    CHECK(same);
    ++conv_runs;
  }
  for (int iter = 0; iter < 300; ++iter) {
    const bool batched = rng.below(2);
    const int64_t N = 1 + rng.below(2), C = 1 + rng.below(3), H = 1 + rng.below(7),
                  W = 1 + rng.below(7);
    int64_t k[2], st[2], pd[2], dl[2], o[2];
    const bool ceil_mode = rng.below(2), is_max = rng.below(2), include_pad = rng.below(2);
    const int64_t dims[2] = {H, W};
    bool valid = true;
    for (int j = 0; j < 2; ++j) {
      k[j] = 1 + rng.below(3);
      st[j] = 1 + rng.below(3);
      pd[j] = rng.below(k[j] / 2 + 1);
      dl[j] = is_max ? 1 + rng.below(2) : 1;
      const int64_t num =
          dims[j] + 2 * pd[j] - dl[j] * (k[j] - 1) - 1 + (ceil_mode ? st[j] - 1 : 0);
      if (num < 0) {
        valid = false;
        break;
      }
      o[j] = num / st[j] + 1;
      if (ceil_mode && (o[j] - 1) * st[j] >= dims[j] + pd[j]) --o[j];
      if (o[j] < 1) valid = false;
    }
    if (!valid) continue;
    std::vector<int64_t> xs, os;
    if (batched) {
      xs.push_back(N);
      os.push_back(N);
    }
    xs.insert(xs.end(), {C, H, W});
    os.insert(os.end(), {C, o[0], o[1]});
    const int32_t rank = batched ? 4 : 3;
    Tensor x(PTERON_DTYPE_FLOAT32, xs, random_order(rng, rank)),
        out(PTERON_DTYPE_FLOAT32, os, random_order(rng, rank)),
        idx(PTERON_DTYPE_INT64, os, random_order(rng, rank));
    for (int64_t i = 0; i < x.numel(); ++i) x.set(i, static_cast<double>(rng.below(11)) - 5);
    Call c;
    c.tensor(x).ints({k[0], k[1]}).ints({st[0], st[1]}).ints({pd[0], pd[1]});
    if (is_max) {
      c.ints({dl[0], dl[1]}).b(ceil_mode).tensor(out).tensor(idx);
      CHECK(c.run("aten::max_pool2d_with_indices.out") == PTERON_OK);
    } else {
      c.b(ceil_mode).b(include_pad).none().tensor(out);
      CHECK(c.run("aten::avg_pool2d.out") == PTERON_OK);
    }
    bool same = true;
    const int64_t NN = batched ? N : 1;
    for (int64_t n = 0; n < NN; ++n)
      for (int64_t ch = 0; ch < C; ++ch)
        for (int64_t oh = 0; oh < o[0]; ++oh)
          for (int64_t ow = 0; ow < o[1]; ++ow) {
            auto in_index = [&](int64_t h, int64_t w) {
              int64_t id[4];
              int32_t q = 0;
              if (batched) id[q++] = n;
              id[q++] = ch;
              id[q++] = h;
              id[q++] = w;
              return lin(x, id);
            };
            int64_t od[4];
            int32_t q = 0;
            if (batched) od[q++] = n;
            od[q++] = ch;
            od[q++] = oh;
            od[q++] = ow;
            const int64_t oi = lin(out, od);
            if (is_max) {
              // A window that holds no input element (possible with
              // dilation) gives -inf at its first in-bounds-adjusted
              // position, as torch does.
              int64_t h0 = oh * st[0] - pd[0], w0 = ow * st[1] - pd[1];
              while (h0 < 0) h0 += dl[0];
              while (w0 < 0) w0 += dl[1];
              double best = -INFINITY;
              int64_t best_i = h0 * W + w0;
              for (int64_t a = 0; a < k[0]; ++a)
                for (int64_t bb = 0; bb < k[1]; ++bb) {
                  const int64_t h = oh * st[0] - pd[0] + a * dl[0],
                                w = ow * st[1] - pd[1] + bb * dl[1];
                  if (h < 0 || h >= H || w < 0 || w >= W) continue;
                  const double v = x.get(in_index(h, w));
                  if (v > best) {
                    best = v;
                    best_i = h * W + w;
                  }
                }
              if (out.get(oi) != best || idx.get(lin(idx, od)) != static_cast<double>(best_i))
                same = false;
            } else {
              const int64_t h0 = oh * st[0] - pd[0], w0 = ow * st[1] - pd[1];
              const int64_t h1 = std::min(h0 + k[0], H + pd[0]),
                            w1 = std::min(w0 + k[1], W + pd[1]);
              const int64_t pool = (h1 - h0) * (w1 - w0);
              double sum = 0;
              int64_t cnt = 0;
              for (int64_t h = std::max<int64_t>(h0, 0); h < std::min(h1, H); ++h)
                for (int64_t w = std::max<int64_t>(w0, 0); w < std::min(w1, W); ++w) {
                  sum += x.get(in_index(h, w));
                  ++cnt;
                }
              const double want =
                  cnt == 0 ? 0.0 : sum / static_cast<double>(include_pad ? pool : cnt);
              if (std::fabs(out.get(oi) - want) > 1e-5) same = false;
            }
          }
    CHECK(same);
    ++pool_runs;
  }
  std::printf("random geometry: %d convolutions, %d poolings checked\n", conv_runs, pool_runs);
}

int main(int argc, char** argv) {
  static const Section sections[] = {{"shape_ops", test_shape_ops},
                                     {"index_ops", test_index_ops},
                                     {"conv", test_conv},
                                     {"pool", test_pool},
                                     {"norm", test_norm},
                                     {"malformed", test_malformed},
                                     {"random_arguments", test_random_arguments},
                                     {"conv_pool_random", test_conv_pool_random}};
  return run_sections(argc, argv, sections, g_checks, g_failures);
}
