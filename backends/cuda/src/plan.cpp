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

struct Fail {
  int32_t* code;
  std::string* err;
  bool operator()(int32_t c, const char* fmt, ...) const {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    *code = c;
    *err = std::string("PteronCudaBackend blob: ") + buf;
    return false;
  }
};

constexpr int8_t kFloat32 = 6;

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
  const Fail fail{code, err};
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
      l.kernel = KernelId::Gemm, l.name = "gemm_f32";
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
      l.block[0] = k::kGemmThreadsX, l.block[1] = k::kGemmThreadsY;
    } else if (node.kernel == "binary_f32") {
      l.kernel = KernelId::Binary, l.name = "binary_f32";
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
      l.kernel = KernelId::Unary, l.name = "unary_f32";
      if (!need_inputs(1)) return false;
      k::UnaryParams& p = l.p.unary;
      p.op = node.ints.empty() ? -1 : int32_t(node.ints[0]);
      p.gelu_tanh = node.ints.size() > 1 ? int32_t(node.ints[1] != 0) : 0;
      if (p.op < 0 || p.op > 5)
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (unary_f32): op %d (0-5)", n, p.op);
      p.numel = o.numel;
      if (in(0).shape != o.shape)
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (unary_f32): %s -> %s", n,
                    shape_str(in(0).shape).c_str(), shape_str(o.shape).c_str());
    } else if (node.kernel == "permute_f32") {
      l.kernel = KernelId::Permute, l.name = "permute_f32";
      if (!need_inputs(1)) return false;
      const Value& x = in(0);
      k::PermuteParams& p = l.p.permute;
      p.numel = o.numel, p.rank = int32_t(o.shape.size());
      if (node.ints.size() != x.shape.size() || x.shape.size() != o.shape.size())
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (permute_f32): %zu dims for %s -> %s",
                    n, node.ints.size(), shape_str(x.shape).c_str(), shape_str(o.shape).c_str());
      int64_t in_strides[k::kMaxRank];
      int64_t s = 1;
      for (int d = p.rank - 1; d >= 0; --d) in_strides[d] = s, s *= x.shape[d];
      bool seen[k::kMaxRank] = {};
      for (int d = 0; d < p.rank; ++d) {
        const int64_t src = node.ints[d];
        if (src < 0 || src >= p.rank || seen[src] || x.shape[src] != o.shape[d])
          return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (permute_f32): not a permutation "
                      "of %s to %s", n, shape_str(x.shape).c_str(), shape_str(o.shape).c_str());
        seen[src] = true;
        p.out_sizes[d] = o.shape[d], p.in_strides[d] = in_strides[src];
      }
    } else if (node.kernel == "copy_f32") {
      l.kernel = KernelId::Copy, l.name = "copy_f32";
      if (!need_inputs(1)) return false;
      l.p.copy.numel = o.numel;
      if (in(0).numel != o.numel)
        return fail(PTERON_ERROR_INVALID_PROGRAM, "node %zu (copy_f32): %s -> %s", n,
                    shape_str(in(0).shape).c_str(), shape_str(o.shape).c_str());
    } else {
      return fail(PTERON_ERROR_NOT_SUPPORTED, "node %zu names kernel '%s', which this pteron does "
                  "not have: export the program with the pteron.lowering.cuda of this release", n, kn);
    }
    if (l.kernel != KernelId::Gemm) {
      const int64_t blocks = (l.numel + kElementThreads - 1) / kElementThreads;
      l.grid[0] = uint32_t(blocks < 1 ? 1 : (blocks > kElementBlocks ? kElementBlocks : blocks));
      l.block[0] = kElementThreads;
    }
    out->push_back(l);
  }
  return true;
}

}  // namespace cuda
}  // namespace pteron
