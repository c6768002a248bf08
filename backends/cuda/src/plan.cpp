// SPDX-License-Identifier: BSD-3-Clause
// plan.cpp - launches from a PteronCudaBackend graph (see plan.h).
#include "plan.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "pteron/types.h"

namespace pteron {
namespace cuda {
namespace {

// *code = c, *err = blob_error(...): fail(CODE, "fmt", ...) in plan_graph.
#define fail(c, ...) (*code = (c), blob_error(err, __VA_ARGS__))

constexpr int8_t kFloat32 = 6;

// Strides, paddings, dilations, window sizes and group counts of conv2d and pool2d: at
// most this (so the output-size arithmetic cannot overflow), and never negative.
constexpr int64_t kMaxWindowParam = 1 << 16;

bool small_ints(const std::vector<int64_t>& v) {
  for (int64_t x : v)
    if (x < 0 || x > kMaxWindowParam) return false;
  return true;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// Row-major strides of `shape`, aligned at the right to `rank` dims; 0 along
// dims where the shape is 1 (or missing) and the output is not.
bool broadcast_strides(const std::vector<int64_t>& shape, const std::vector<int64_t>& out,
                       int64_t* strides) {
  const int rank = int(out.size()), off = rank - int(shape.size());
  if (off < 0) return false;
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    const int64_t size = d >= off ? shape[d - off] : 1;
    if (size != out[d] && size != 1) return false;
    strides[d] = size == 1 ? 0 : s;
    s *= size;
  }
  return true;
}

}  // namespace

bool plan_graph(const Graph& g, std::vector<Launch>* out, int32_t* code, std::string* err) {
  out->clear();
  for (size_t i = 0; i < g.values.size(); ++i)
    if (g.values[i].dtype != kFloat32)
      return fail(PTERON_ERROR_NOT_SUPPORTED, "value %zu has dtype %d; this pteron's kernels take "
                  "float32 only", i, g.values[i].dtype);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    const char* kn = node.kernel.c_str();
    if (node.outputs.size() != 1)
      return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (%s) has %zu outputs, its kernel one", n,
                  kn, node.outputs.size());
    Launch l{};
    l.output = node.outputs[0];
    l.inputs = node.inputs;
    const Value& o = g.values[l.output];
    l.numel = o.numel;
    auto in = [&](size_t j) -> const Value& { return g.values[node.inputs[j]]; };
    auto need_inputs = [&](size_t count) {
      return node.inputs.size() == count ||
             fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (%s) has %zu inputs, it needs %zu", n, kn,
                  node.inputs.size(), count);
    };
    if (o.shape.size() > size_t(k::kMaxRank))
      return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (%s): output rank %zu above %d", n, kn,
                  o.shape.size(), k::kMaxRank);
    if (node.kernel == "gemm_f32") {
      l.kernel = KernelId::Gemm;
      const int64_t mode = node.ints.empty() ? -1 : node.ints[0];
      if (mode < 0 || mode > 2)
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (gemm_f32): mode %lld (0, 1 or 2)", n,
                    (long long)mode);
      if (!need_inputs(mode == 1 ? 3 : 2)) return false;
      const Value& a = in(mode == 1 ? 1 : 0);
      const Value& b = in(mode == 1 ? 2 : 1);
      k::GemmParams& p = l.p.gemm;
      p.mode = int32_t(mode);
      const size_t r = mode == 2 ? 3 : 2;
      if (a.shape.size() != r || b.shape.size() != r || o.shape.size() != r)
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (gemm_f32): shapes %s @ %s -> %s", n,
                    shape_str(a.shape).c_str(), shape_str(b.shape).c_str(), shape_str(o.shape).c_str());
      p.batch = r == 3 ? a.shape[0] : 1;
      p.m = a.shape[r - 2], p.k = a.shape[r - 1], p.n = b.shape[r - 1];
      const bool fits = b.shape[r - 2] == p.k && o.shape[r - 2] == p.m && o.shape[r - 1] == p.n &&
                        (r == 2 || (b.shape[0] == p.batch && o.shape[0] == p.batch));
      if (!fits)
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (gemm_f32): shapes %s @ %s -> %s", n,
                    shape_str(a.shape).c_str(), shape_str(b.shape).c_str(), shape_str(o.shape).c_str());
      if (mode == 1) {
        int64_t st[2];
        if (!broadcast_strides(in(0).shape, o.shape, st))
          return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (gemm_f32): bias %s does not "
                      "broadcast to %s", n, shape_str(in(0).shape).c_str(), shape_str(o.shape).c_str());
        p.bias_rs = st[0], p.bias_cs = st[1];
      }
      const int64_t gx = (p.n + k::kGemmTileN - 1) / k::kGemmTileN;
      const int64_t gy = (p.m + k::kGemmTileM - 1) / k::kGemmTileM;
      if (gy > 65535 || p.batch > 65535 || gx > 0x7fffffff)
        return fail(PTERON_ERROR_NOT_SUPPORTED, "node %zu (gemm_f32): %lld x %lld x %lld blocks "
                    "exceed CUDA's grid", n, (long long)gx, (long long)gy, (long long)p.batch);
      l.grid[0] = uint32_t(gx), l.grid[1] = uint32_t(gy), l.grid[2] = uint32_t(p.batch);
      l.threads = o.numel;  // (the tiled grid covers it; 0: nothing to launch)
      l.block[0] = k::kGemmThreadsX, l.block[1] = k::kGemmThreadsY;
    } else if (node.kernel == "binary_f32") {
      l.kernel = KernelId::Binary;
      if (!need_inputs(2)) return false;
      k::BinaryParams& p = l.p.binary;
      p.op = node.ints.empty() ? -1 : int32_t(node.ints[0]);
      if (p.op < 0 || p.op > 3)
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (binary_f32): op %d (0-3)", n, p.op);
      p.numel = o.numel, p.rank = int32_t(o.shape.size());
      for (int d = 0; d < p.rank; ++d) p.out_sizes[d] = o.shape[d];
      if (!broadcast_strides(in(0).shape, o.shape, p.a_strides) ||
          !broadcast_strides(in(1).shape, o.shape, p.b_strides))
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (binary_f32): %s and %s do not "
                    "broadcast to %s", n, shape_str(in(0).shape).c_str(),
                    shape_str(in(1).shape).c_str(), shape_str(o.shape).c_str());
    } else if (node.kernel == "unary_f32") {
      l.kernel = KernelId::Unary;
      if (!need_inputs(1)) return false;
      k::UnaryParams& p = l.p.unary;
      p.op = node.ints.empty() ? -1 : int32_t(node.ints[0]);
      p.gelu_tanh = node.ints.size() > 1 ? int32_t(node.ints[1] != 0) : 0;
      if (p.op < 0 || p.op > 12 || (p.op == 11 && node.floats.size() != 2) ||
          (p.op == 12 && node.floats.size() != 1))
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (unary_f32): op %d (0-12; 11 takes "
                    "floats lo, hi, 12 an exponent)", n, p.op);
      p.lo = p.op >= 11 ? node.floats[0] : 0.0f;
      p.hi = p.op == 11 ? node.floats[1] : 0.0f;
      p.numel = o.numel;
      if (in(0).shape != o.shape)
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (unary_f32): %s -> %s", n,
                    shape_str(in(0).shape).c_str(), shape_str(o.shape).c_str());
    } else if (node.kernel == "strided_f32") {
      l.kernel = KernelId::Strided;
      if (!need_inputs(1)) return false;
      const Value& x = in(0);
      k::StridedParams& p = l.p.strided;
      p.numel = o.numel, p.rank = int32_t(o.shape.size());
      if (node.ints.size() != size_t(p.rank) + 1)
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (strided_f32): %zu parameters for "
                    "output %s (offset and one stride per dim)", n, node.ints.size(),
                    shape_str(o.shape).c_str());
      p.offset = node.ints[0];
      int64_t last = p.offset;  // the largest input index read
      bool ok = p.offset >= 0;
      for (int d = 0; d < p.rank; ++d) {
        p.out_sizes[d] = o.shape[d], p.in_strides[d] = node.ints[d + 1];
        ok = ok && p.in_strides[d] >= 0 && p.in_strides[d] <= x.numel;
        // (overflow-safe: the step must fit in what is left of the input)
        if (ok && o.shape[d] > 1 && p.in_strides[d] > 0) {
          ok = o.shape[d] - 1 <= (x.numel - 1 - last) / p.in_strides[d];
          if (ok) last += (o.shape[d] - 1) * p.in_strides[d];
        }
      }
      if (!ok || (o.numel > 0 && last >= x.numel))
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (strided_f32): offset and strides "
                    "read outside input %s", n, shape_str(x.shape).c_str());
    } else if (node.kernel == "copy_f32") {
      l.kernel = KernelId::Copy;
      if (!need_inputs(1)) return false;
      l.p.copy.numel = o.numel;
      if (in(0).numel != o.numel)
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (copy_f32): %s -> %s", n,
                    shape_str(in(0).shape).c_str(), shape_str(o.shape).c_str());
    } else if (node.kernel == "softmax_f32") {
      l.kernel = KernelId::Softmax;
      if (!need_inputs(1)) return false;
      const int64_t rank = int64_t(o.shape.size());
      const int64_t dim = node.ints.empty() ? -1 : node.ints[0];
      if (in(0).shape != o.shape || dim < 0 || dim >= rank)
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (softmax_f32): dim %lld of %s -> %s",
                    n, (long long)dim, shape_str(in(0).shape).c_str(), shape_str(o.shape).c_str());
      k::SoftmaxParams& p = l.p.softmax;
      p.outer = 1, p.inner = 1, p.len = o.shape[dim];
      for (int64_t d = 0; d < dim; ++d) p.outer *= o.shape[d];
      for (int64_t d = dim + 1; d < rank; ++d) p.inner *= o.shape[d];
      p.log = node.ints.size() > 1 && node.ints[1] ? 1 : 0;
      l.threads = p.len ? p.outer * p.inner : 0;
    } else if (node.kernel == "layer_norm_f32") {
      l.kernel = KernelId::LayerNorm;
      k::LayerNormParams& p = l.p.layer_norm;
      if (node.ints.size() != 3 || node.floats.size() != 1)
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (layer_norm_f32): parameters", n);
      const int64_t dims = node.ints[0];
      p.has_weight = node.ints[1] ? 1 : 0, p.has_bias = node.ints[2] ? 1 : 0;
      p.eps = node.floats[0];
      if (!need_inputs(size_t(1 + p.has_weight + p.has_bias))) return false;
      if (in(0).shape != o.shape || dims < 1 || dims > int64_t(o.shape.size()))
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (layer_norm_f32): %lld dims of %s",
                    n, (long long)dims, shape_str(o.shape).c_str());
      p.len = 1;
      for (size_t d = o.shape.size() - size_t(dims); d < o.shape.size(); ++d) p.len *= o.shape[d];
      for (size_t j = 1; j < node.inputs.size(); ++j)
        if (in(j).numel != p.len)
          return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (layer_norm_f32): weight or bias "
                      "%s for rows of %lld", n, shape_str(in(j).shape).c_str(), (long long)p.len);
      p.rows = p.len ? o.numel / p.len : 0;
      l.threads = p.rows;
    } else if (node.kernel == "reduce_f32") {
      l.kernel = KernelId::Reduce;
      if (!need_inputs(1)) return false;
      const Value& x = in(0);
      k::ReduceParams& p = l.p.reduce;
      const int rank = int(x.shape.size());
      if (node.ints.empty() || node.ints[0] < 0 || node.ints[0] > 1 || rank > k::kMaxRank)
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (reduce_f32): parameters", n);
      p.op = int32_t(node.ints[0]);
      bool reduced[k::kMaxRank] = {};
      for (size_t j = 1; j < node.ints.size(); ++j) {
        const int64_t d = node.ints[j];
        if (d < 0 || d >= rank || reduced[d])
          return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (reduce_f32): dim %lld of %s", n,
                      (long long)d, shape_str(x.shape).c_str());
        reduced[d] = true;
      }
      int64_t stride = 1, kept = 1;
      p.count = 1;
      int64_t ks[k::kMaxRank], kst[k::kMaxRank], rs[k::kMaxRank], rst[k::kMaxRank];
      int nk = 0, nr = 0;
      for (int d = rank - 1; d >= 0; --d) {
        if (reduced[d])
          rs[nr] = x.shape[d], rst[nr++] = stride, p.count *= x.shape[d];
        else
          ks[nk] = x.shape[d], kst[nk++] = stride, kept *= x.shape[d];
        stride *= x.shape[d];
      }
      for (int j = 0; j < nk; ++j) p.keep_sizes[j] = ks[nk - 1 - j], p.keep_strides[j] = kst[nk - 1 - j];
      for (int j = 0; j < nr; ++j) p.red_sizes[j] = rs[nr - 1 - j], p.red_strides[j] = rst[nr - 1 - j];
      p.keep_rank = nk, p.red_rank = nr, p.numel = o.numel;
      if (kept != o.numel || nr == 0)
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (reduce_f32): %s -> %s", n,
                    shape_str(x.shape).c_str(), shape_str(o.shape).c_str());
    } else if (node.kernel == "conv2d_f32") {
      l.kernel = KernelId::Conv2d;
      k::ConvParams& p = l.p.conv;
      if (node.ints.size() != 8 || !small_ints(node.ints))
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (conv2d_f32): parameters (each in "
                    "[0, %lld])", n, (long long)kMaxWindowParam);
      p.sh = int32_t(node.ints[0]), p.sw = int32_t(node.ints[1]), p.ph = int32_t(node.ints[2]);
      p.pw = int32_t(node.ints[3]), p.dh = int32_t(node.ints[4]), p.dw = int32_t(node.ints[5]);
      p.groups = int32_t(node.ints[6]), p.has_bias = node.ints[7] ? 1 : 0;
      if (!need_inputs(size_t(2 + p.has_bias))) return false;
      const Value& x = in(0);
      const Value& w = in(1);
      bool ok = x.shape.size() == 4 && w.shape.size() == 4 && o.shape.size() == 4 &&
                w.shape[2] <= kMaxWindowParam && w.shape[3] <= kMaxWindowParam && p.sh > 0 &&
                p.sw > 0 && p.dh > 0 && p.dw > 0 && p.ph >= 0 && p.pw >= 0 && p.groups > 0;
      if (ok) {
        p.n = x.shape[0], p.c = x.shape[1], p.h = x.shape[2], p.w = x.shape[3];
        p.oc = w.shape[0], p.kh = w.shape[2], p.kw = w.shape[3];
        p.oh = o.shape[2], p.ow = o.shape[3];
        const int64_t eh = (p.h + 2 * p.ph - p.dh * (p.kh - 1) - 1) / p.sh + 1;
        const int64_t ew = (p.w + 2 * p.pw - p.dw * (p.kw - 1) - 1) / p.sw + 1;
        ok = p.c % p.groups == 0 && p.oc % p.groups == 0 && w.shape[1] == p.c / p.groups &&
             o.shape[0] == p.n && o.shape[1] == p.oc && p.oh == eh && p.ow == ew &&
             (!p.has_bias || in(2).numel == p.oc);
      }
      if (!ok)
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (conv2d_f32): %s * %s -> %s", n,
                    shape_str(x.shape).c_str(), shape_str(w.shape).c_str(),
                    shape_str(o.shape).c_str());
    } else if (node.kernel == "pool2d_f32") {
      l.kernel = KernelId::Pool2d;
      if (!need_inputs(1)) return false;
      k::PoolParams& p = l.p.pool;
      const Value& x = in(0);
      if (node.ints.size() != 11 || !small_ints(node.ints) || x.shape.size() != 4 ||
          o.shape.size() != 4)
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (pool2d_f32): parameters (each in "
                    "[0, %lld]) or shapes", n, (long long)kMaxWindowParam);
      int32_t* f[] = {&p.op, &p.kh, &p.kw, &p.sh, &p.sw, &p.ph, &p.pw, &p.dh, &p.dw,
                      &p.count_include_pad, &p.divisor};
      for (int j = 0; j < 11; ++j) *f[j] = int32_t(node.ints[j]);
      p.n = x.shape[0], p.c = x.shape[1], p.h = x.shape[2], p.w = x.shape[3];
      p.oh = o.shape[2], p.ow = o.shape[3];
      if (p.op < 0 || p.op > 1 || p.kh < 1 || p.kw < 1 || p.sh < 1 || p.sw < 1 || p.dh < 1 ||
          p.dw < 1 || p.ph < 0 || p.pw < 0 || p.divisor < 0 || o.shape[0] != p.n || o.shape[1] != p.c)
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (pool2d_f32): parameters for %s -> %s",
                    n, shape_str(x.shape).c_str(), shape_str(o.shape).c_str());
    } else if (node.kernel == "cat_f32") {
      l.kernel = KernelId::Cat;
      k::CatParams& p = l.p.cat;
      const int64_t rank = int64_t(o.shape.size());
      const int64_t dim = node.ints.empty() ? -1 : node.ints[0];
      if (node.inputs.empty() || node.inputs.size() > size_t(k::kMaxCatInputs) || dim < 0 || dim >= rank)
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (cat_f32): %zu inputs along dim %lld "
                    "(1 to %d)", n, node.inputs.size(), (long long)dim, k::kMaxCatInputs);
      int64_t inner = 1, along = 0;
      for (int64_t d = dim + 1; d < rank; ++d) inner *= o.shape[d];
      p.count = int32_t(node.inputs.size());
      for (size_t j = 0; j < node.inputs.size(); ++j) {
        const Value& x = in(j);
        bool same = int64_t(x.shape.size()) == rank;
        for (int64_t d = 0; same && d < rank; ++d) same = d == dim || x.shape[d] == o.shape[d];
        if (!same)
          return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (cat_f32): input %s into %s", n,
                      shape_str(x.shape).c_str(), shape_str(o.shape).c_str());
        p.span[j] = x.shape[dim] * inner;
        along += x.shape[dim];
      }
      if (along != o.shape[dim])
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (cat_f32): sizes along dim %lld add "
                    "up to %lld, the output has %lld", n, (long long)dim, (long long)along,
                    (long long)o.shape[dim]);
      p.out_span = along * inner;
      p.numel = o.numel;
    } else {
      return fail(PTERON_ERROR_NOT_SUPPORTED, "node %zu names kernel '%s', which this pteron does "
                  "not have: export the program with the pteron.lowering.cuda of this release", n, kn);
    }
    if (l.kernel != KernelId::Gemm) {
      // one thread per output element; softmax and layer norm set one per row
      if (l.kernel != KernelId::Softmax && l.kernel != KernelId::LayerNorm) l.threads = l.numel;
      const int64_t blocks = (l.threads + kElementThreads - 1) / kElementThreads;
      l.grid[0] = uint32_t(blocks < 1 ? 1 : (blocks > kElementBlocks ? kElementBlocks : blocks));
      l.block[0] = kElementThreads;
    }
    out->push_back(l);
  }
  return true;
}

std::unique_ptr<LaunchArgs> launch_args(const Launch& l, const std::vector<uint64_t>& address) {
  uint64_t inputs[k::kMaxCatInputs] = {};
  for (size_t j = 0; j < l.inputs.size() && j < size_t(k::kMaxCatInputs); ++j)
    inputs[j] = address[l.inputs[j]];
  const int32_t mode = l.kernel == KernelId::Gemm ? l.p.gemm.mode : 0;
  return std::unique_ptr<LaunchArgs>(
      new LaunchArgs(l.kernel, &l.p, inputs, l.inputs.size(), mode, address[l.output]));
}

}  // namespace cuda
}  // namespace pteron

#undef fail
