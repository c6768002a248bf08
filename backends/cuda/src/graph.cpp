// SPDX-License-Identifier: BSD-3-Clause
// graph.cpp - reads and checks PteronCudaBackend's blob (see graph.h).
#include "graph.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "cuda_graph_generated.h"

namespace pteron {
namespace cuda {
namespace {

constexpr int kMaxDim = 16;
constexpr int64_t kMaxNumel = int64_t(1) << 40;
constexpr int32_t kMaxExternals = 65536;

bool known_dtype(int8_t d) { return d == 6 || d == 4 || d == 3 || d == 11; }

}  // namespace

bool blob_error(std::string* err, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  *err = std::string("PteronCudaBackend blob: ") + buf;
  return false;
}

bool constant_bytes(pteron_kernel_context* ctx, const Graph& g, std::vector<const void*>* data,
                    std::string* err) {
  data->assign(g.values.size(), nullptr);
  for (size_t i = 0; i < g.values.size(); ++i) {
    const Value& v = g.values[i];
    if (v.constant.empty()) continue;
    size_t bytes = 0;
    if (pteron_named_data_get(ctx, v.constant.c_str(), &(*data)[i], &bytes) != PTERON_OK)
      return blob_error(err, "constant '%s' is not in the program's named data", v.constant.c_str());
    if (bytes != size_t(v.numel) * sizeof(float))
      return blob_error(err, "constant '%s' has %zu bytes, its shape needs %lld", v.constant.c_str(),
                        bytes, (long long)(v.numel * 4));
  }
  return true;
}

bool parse_graph(const uint8_t* data, size_t size, Graph* g, std::string* err) {
  if (!data || size < 8 || !flatbuffers::BufferHasIdentifier(data, fb::GraphIdentifier()))
    return blob_error(err, "%zu bytes without the identifier \"PTCU\" at bytes 4-8: not a blob of "
                "pteron.lowering.cuda (export the program again with CudaPartitioner)", size);
  flatbuffers::Verifier v(data, size, flatbuffers::Verifier::Options{64, 1000000});
  if (!fb::VerifyGraphBuffer(v))
    return blob_error(err, "%zu bytes fail the flatbuffers verifier (truncated or corrupt)", size);
  const fb::Graph* root = fb::GetGraph(data);
  // The verifier checks a vector's 4-byte length field for alignment, not
  // its elements: a blob's [long] vectors (shapes, node parameters) must be
  // 8-aligned to be read in place (the blob itself is 16-aligned, kernel.h).
  auto aligned = [](const flatbuffers::Vector<int64_t>* v) {
    return !v || reinterpret_cast<uintptr_t>(v->data()) % alignof(int64_t) == 0;
  };
  if (root->values())
    for (uint32_t i = 0; i < root->values()->size(); ++i)
      if (!aligned(root->values()->Get(i)->shape()))
        return blob_error(err, "value %u: its shape vector is not 8-byte aligned", i);
  if (root->nodes())
    for (uint32_t i = 0; i < root->nodes()->size(); ++i)
      if (!aligned(root->nodes()->Get(i)->ints()))
        return blob_error(err, "node %u: its ints vector is not 8-byte aligned", i);
  if (root->version() != kBlobVersion)
    return blob_error(err, "format version %u, this pteron reads version %u: export the program "
                "again with this pteron's pteron.lowering.cuda", root->version(), kBlobVersion);
  const auto* values = root->values();
  const auto* nodes = root->nodes();
  if (!values || !nodes) return blob_error(err, "no values or no nodes");
  g->values.clear();
  g->nodes.clear();
  g->num_externals = 0;
  std::vector<char> is_external(kMaxExternals, 0);
  for (uint32_t i = 0; i < values->size(); ++i) {
    const fb::Value* fv = values->Get(i);
    Value val;
    val.dtype = fv->dtype();
    if (!known_dtype(val.dtype)) return blob_error(err, "value %u has dtype %d (not one of 3, 4, 6, 11)", i, val.dtype);
    if (fv->shape()) {
      if (fv->shape()->size() > kMaxDim)
        return blob_error(err, "value %u has %u dimensions (at most %d)", i, fv->shape()->size(), kMaxDim);
      for (int64_t d : *fv->shape()) {
        if (d < 0 || d > kMaxNumel || (d > 0 && val.numel > kMaxNumel / d))
          return blob_error(err, "value %u: size %lld is negative or makes it (or the dimension) above 2^40 elements", i,
                      (long long)d);
        val.numel *= d;
        val.shape.push_back(d);
      }
    }
    val.external = fv->external();
    val.is_output = fv->is_output();
    if (fv->constant()) val.constant = fv->constant()->str();
    if (val.external < -1 || val.external >= kMaxExternals)
      return blob_error(err, "value %u: external index %d (at most %d)", i, val.external, kMaxExternals - 1);
    if (val.external >= 0) {
      if (is_external[val.external]) return blob_error(err, "external index %d is used twice", val.external);
      is_external[val.external] = 1;
      g->num_externals = std::max<uint32_t>(g->num_externals, uint32_t(val.external) + 1);
    }
    if (val.is_output && val.external < 0) return blob_error(err, "value %u is an output but not an external", i);
    if (!val.constant.empty() && val.external >= 0)
      return blob_error(err, "value %u is both a constant and an external", i);
    if (fv->constant() && val.constant.empty()) return blob_error(err, "value %u: empty constant key", i);
    g->values.push_back(std::move(val));
  }
  const size_t nv = g->values.size();
  std::vector<char> ready(nv, 0);  // holds data when a node runs
  for (size_t i = 0; i < nv; ++i)
    ready[i] = !g->values[i].constant.empty() || (g->values[i].external >= 0 && !g->values[i].is_output);
  std::vector<char> written(nv, 0);
  for (uint32_t n = 0; n < nodes->size(); ++n) {
    const fb::Node* fn = nodes->Get(n);
    Node node;
    if (!fn->kernel() || fn->kernel()->size() == 0) return blob_error(err, "node %u names no kernel", n);
    node.kernel = fn->kernel()->str();
    if (fn->inputs())
      for (uint32_t id : *fn->inputs()) {
        if (id >= nv) return blob_error(err, "node %u (%s) reads value %u of %zu", n, node.kernel.c_str(), id, nv);
        if (!ready[id])
          return blob_error(err, "node %u (%s) reads value %u before any node writes it", n,
                      node.kernel.c_str(), id);
        node.inputs.push_back(id);
      }
    if (fn->outputs())
      for (uint32_t id : *fn->outputs()) {
        if (id >= nv) return blob_error(err, "node %u (%s) writes value %u of %zu", n, node.kernel.c_str(), id, nv);
        const Value& val = g->values[id];
        if (!val.constant.empty() || (val.external >= 0 && !val.is_output))
          return blob_error(err, "node %u (%s) writes value %u, a constant or an input", n, node.kernel.c_str(), id);
        if (written[id]) return blob_error(err, "value %u is written twice (again by node %u)", id, n);
        written[id] = ready[id] = 1;
        node.outputs.push_back(id);
      }
    if (node.outputs.empty()) return blob_error(err, "node %u (%s) writes nothing", n, node.kernel.c_str());
    if (fn->ints()) node.ints.assign(fn->ints()->begin(), fn->ints()->end());
    if (fn->floats()) node.floats.assign(fn->floats()->begin(), fn->floats()->end());
    g->nodes.push_back(std::move(node));
  }
  for (size_t i = 0; i < nv; ++i)
    if (g->values[i].is_output && !written[i])
      return blob_error(err, "output value %zu (external %d) is never written", i, g->values[i].external);
  return true;
}

int32_t external_data(const Graph& g, pteron_value* const* args, size_t num_args,
                      std::vector<float*>* host, std::string* err) {
  if (num_args < g.num_externals) {
    *err = "PteronCudaBackend: " + std::to_string(num_args) + " arguments, the graph needs " +
           std::to_string(g.num_externals);
    return PTERON_ERROR_INVALID_ARGUMENT;
  }
  host->assign(g.values.size(), nullptr);
  for (size_t i = 0; i < g.values.size(); ++i) {
    const Value& v = g.values[i];
    if (v.external < 0) continue;
    const pteron_value* arg = args[v.external];
    const pteron_tensor* t = arg && arg->tag == PTERON_VALUE_TENSOR ? arg->u.tensor : nullptr;
    bool same = t && t->dtype == PTERON_DTYPE_FLOAT32 && size_t(t->dim) == v.shape.size() && t->data;
    for (int32_t k = 0; same && k < t->dim; ++k) same = t->sizes[k] == v.shape[k] && t->dim_order[k] == k;
    if (!same) {
      *err = "PteronCudaBackend: argument " + std::to_string(v.external) +
             " is not the contiguous float32 tensor the graph was lowered for";
      return PTERON_ERROR_SHAPE_MISMATCH;
    }
    (*host)[i] = static_cast<float*>(t->data);
  }
  return PTERON_OK;
}

}  // namespace cuda
}  // namespace pteron
