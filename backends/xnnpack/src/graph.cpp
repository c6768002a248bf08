// SPDX-License-Identifier: BSD-3-Clause
// graph.cpp - blob header, flatbuffer verification, values and graph inputs and outputs: a
// blob read into a Graph for the XNNPACK delegate (nodes: graph_nodes.cpp; shape inference:
// shape_inference.cpp).
//
// Blob layout (little-endian, as ExecuTorch's exporter writes it):
//   [0,4)   zero bytes (so that [4,8) lines up with a flatbuffer's identifier)
//   [4,8)   "XH00"
//   [8,10)  header length (>= 30)
//   [10,14) flatbuffer offset     [14,18) flatbuffer size
//   [18,22) constant data offset  [22,30) constant data size (uint64)
// A blob may also be a bare flatbuffer (identifier "XN01" at [4,8)), with no
// constant region.
#include "graph.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "flatbuffers/flatbuffers.h"
#include "graph_reader.h"
#include "half.h"

namespace pteron {
namespace xnnpack {
namespace fbx = ::pteron::xnn;
using reader::fail;
using reader::read_node;
using reader::to_sizes;
using reader::ValueIds;

const char* op_name(Op op) {
  const char* n = fbx::EnumNameOp(op);
  return (n && *n) ? n : "unknown";
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += std::to_string(s[i]);
  }
  return r + "]";
}

namespace {

uint64_t rd_le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

const char* dtype_name(fbx::DataType t) {
  const char* n = fbx::EnumNameDataType(t);
  return (n && *n) ? n : "unknown";
}

// A key from the blob, safe to put in a message (non-printable bytes as \xNN).
std::string printable(const flatbuffers::String* s) {
  std::string r;
  for (unsigned char c : s->str()) {
    if (c >= 0x20 && c < 0x7F) {
      r += char(c);
    } else {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02X", c);
      r += b;
    }
  }
  return r;
}

// ---- blob header and flatbuffer ----------------------------------------------

// Where the graph flatbuffer and the constant region lie in a blob.
struct BlobRegions {
  const uint8_t* graph = nullptr;
  size_t graph_size = 0;
  const uint8_t* constants = nullptr;  // null for a bare flatbuffer
  uint64_t constants_size = 0;
};

// Reads the "XH00" header (or recognises a bare "XN01" flatbuffer) and
// checks that both regions lie inside the blob.
bool locate_regions(const uint8_t* blob, size_t size, BlobRegions* r, std::string* err) {
  if (!blob || size < 8)
    return fail(err, "blob of %zu bytes is too short to hold a header or a graph", size);
  if (std::memcmp(blob + 4, "XH00", 4) == 0) {
    if (size < 30) return fail(err, "truncated blob: %zu bytes, the header alone needs 30", size);
    uint64_t hlen = rd_le(blob + 8, 2), fo = rd_le(blob + 10, 4), fs = rd_le(blob + 14, 4);
    uint64_t co = rd_le(blob + 18, 4), cs = rd_le(blob + 22, 8);
    if (hlen < 30)
      return fail(err, "blob header length %llu is below 30", (unsigned long long)hlen);
    if (fs == 0 || fo < hlen || fo > size || fs > size - fo)
      return fail(
          err, "truncated blob: header places the graph at [%llu, %llu) but the blob has %zu bytes",
          (unsigned long long)fo, (unsigned long long)(fo + fs), size);
    if (co > size || cs > size - co)
      return fail(
          err,
          "truncated blob: header places constant data at [%llu, %llu) but the blob has %zu bytes",
          (unsigned long long)co, (unsigned long long)(co + cs), size);
    r->graph = blob + fo;
    r->graph_size = fs;
    r->constants = blob + co;
    r->constants_size = cs;
    return true;
  }
  if (std::memcmp(blob + 4, fbx::GraphIdentifier(), 4) == 0) {
    r->graph = blob;
    r->graph_size = size;
    return true;
  }
  return fail(err,
              "blob starts with neither the XNNPACK header magic \"XH00\" nor the graph "
              "identifier \"XN01\"");
}

// Verifies the graph flatbuffer on an aligned copy (the blob may sit at any
// offset in the program) kept in `aligned`; null with `err` if it is corrupt.
const fbx::Graph* verify_graph(const BlobRegions& r, std::vector<uint64_t>* aligned,
                               std::string* err) {
  aligned->resize((r.graph_size + 7) / 8);
  std::memcpy(aligned->data(), r.graph, r.graph_size);
  const uint8_t* fb = reinterpret_cast<const uint8_t*>(aligned->data());
  flatbuffers::Verifier verifier(fb, r.graph_size);
  if (!fbx::VerifyGraphBuffer(verifier)) {
    fail(err, "the graph flatbuffer (%zu bytes) is corrupt: it fails verification", r.graph_size);
    return nullptr;
  }
  const fbx::Graph* root = fbx::GetGraph(fb);
  if (!root->values() || !root->nodes()) {
    fail(err, "the graph has no %s list", root->values() ? "node" : "value");
    return nullptr;
  }
  return root;
}

// ---- values -------------------------------------------------------------------

// Copies `bytes` of float data into storage the graph owns (a constant of
// no elements owns an empty vector, whose data() may be NULL: no memcpy).
const float* own_copy(Graph* g, const Shape& dims, const void* data, uint64_t bytes) {
  g->owned_constants.emplace_back(numel(dims));
  if (bytes) std::memcpy(g->owned_constants.back().data(), data, bytes);
  return g->owned_constants.back().data();
}

// The bytes of constant `ci` (at least `want` of them, for value id `vid`):
// the program's named data (in place) or the blob's constant region.
bool constant_bytes(pteron_kernel_context* ctx, const fbx::Graph* root, const BlobRegions& r,
                    uint32_t ci, uint64_t want, uint32_t vid, const char* what, const void** out,
                    std::string* err) {
  const auto* consts = root->constants();
  if (!consts || ci >= consts->size())
    return fail(err, "value id %u: %s index %u out of range (%u constants)", vid, what, ci,
                consts ? consts->size() : 0u);
  const fbx::Constant* c = consts->Get(ci);
  if (c->offset() != ~uint64_t(0)) {
    if (c->offset() > r.constants_size || want > r.constants_size - c->offset())
      return fail(err,
                  "value id %u: %s %u at [%llu, %llu) lies outside the blob's "
                  "constant data (%llu bytes)",
                  vid, what, ci, (unsigned long long)c->offset(),
                  (unsigned long long)(c->offset() + want), (unsigned long long)r.constants_size);
    *out = r.constants + c->offset();
    return true;
  }
  if (!c->key() || c->key()->size() == 0)
    return fail(err, "value id %u: %s %u has neither an offset nor a named-data key", vid, what,
                ci);
  size_t dsize = 0;
  if (pteron_named_data_get(ctx, c->key()->c_str(), out, &dsize) != PTERON_OK)
    return fail(err,
                "value id %u: named data '%s' is in neither the program nor its data file (.ptd)",
                vid, printable(c->key()).c_str());
  if (dsize < want)
    return fail(err, "value id %u: named data '%s' holds %zu bytes, the %s needs %llu", vid,
                printable(c->key()).c_str(), dsize, what, (unsigned long long)want);
  return true;
}

// The data of a float32 constant value: named data used in place when
// aligned, else a copy.
bool read_constant(pteron_kernel_context* ctx, const fbx::Graph* root, const BlobRegions& r,
                   uint32_t ci, Value& v, Graph* g, std::string* err) {
  const uint64_t want = uint64_t(numel(v.dims)) * sizeof(float);
  const void* data = nullptr;
  if (!constant_bytes(ctx, root, r, ci, want, v.id, "constant", &data, err)) return false;
  const auto* c = root->constants()->Get(ci);
  if (c->offset() == ~uint64_t(0) && reinterpret_cast<uintptr_t>(data) % alignof(float) == 0)
    v.constant = static_cast<const float*>(data);
  else
    v.constant = own_copy(g, v.dims, data, want);
  return true;
}

// An F16 constant (upstream's float16 lowering): widened to the float32 the graph owns (exact).
bool read_half_constant(pteron_kernel_context* ctx, const fbx::Graph* root, const BlobRegions& r,
                        uint32_t ci, Value& v, Graph* g, std::string* err) {
  const size_t count = numel(v.dims);
  const void* data = nullptr;
  if (!constant_bytes(ctx, root, r, ci, uint64_t(count) * 2, v.id, "constant", &data, err))
    return false;
  g->owned_constants.emplace_back(count);
  float* out = g->owned_constants.back().data();
  for (size_t i = 0; i < count; ++i) {
    uint16_t h;
    std::memcpy(&h, static_cast<const char*>(data) + 2 * i, 2);
    out[i] = pteron::kern::half_bits_to_float(h);
  }
  v.constant = out;
  return true;
}

// What every tensor value has: id, shape, graph input / output, external index.
bool read_tensor_fields(const fbx::Graph* root, const fbx::Tensor* t, uint32_t i, Value& v,
                        ValueIds* ids, std::string* err) {
  v.id = t->id();
  v.dims = to_sizes(t->shape());
  if (t->rank() != v.dims.size())
    return fail(err, "value %u (id %u): rank %u but %zu dims", i, v.id, t->rank(), v.dims.size());
  if (v.dims.size() > PTERON_MAX_DIM)
    return fail(err, "value %u (id %u) has %zu dims (at most %d)", i, v.id, v.dims.size(),
                PTERON_MAX_DIM);
  if (checked_numel(v.dims) > kMaxElements)
    return fail(err, "value %u (id %u) has shape %s, more than %zu elements", i, v.id,
                shape_str(v.dims).c_str(), kMaxElements);
  if (!ids->index.emplace(v.id, i).second) return fail(err, "value id %u is defined twice", v.id);
  v.graph_input = (t->value_flags() & 1u) != 0;
  v.graph_output = (t->value_flags() & 2u) != 0;
  if (v.graph_input || v.graph_output) {
    v.external = t->external_index();
    if (v.external >= root->num_externals())
      return fail(err, "value id %u: external index %u out of range (%u externals)", v.id,
                  v.external, root->num_externals());
  }
  return true;
}

// ---- quantized values ---------------------------------------------------------

// Bytes per element of a quantized constant's datatype, 0 for those not read.
size_t quant_elem_size(fbx::DataType t) {
  switch (t) {
    case fbx::DataType::QInt8:
    case fbx::DataType::QUInt8:
    case fbx::DataType::QCInt8: return 1;
    case fbx::DataType::QInt32:
    case fbx::DataType::QCInt32: return 4;
    default: return 0;
  }
}

int64_t quant_elem(fbx::DataType t, const void* data, size_t i) {
  switch (t) {
    case fbx::DataType::QUInt8: return static_cast<const uint8_t*>(data)[i];
    case fbx::DataType::QInt32:
    case fbx::DataType::QCInt32: {
      int32_t v;
      std::memcpy(&v, static_cast<const uint8_t*>(data) + 4 * i, 4);  // any alignment
      return v;
    }
    default: return static_cast<const int8_t*>(data)[i];
  }
}

const char* quant_params_name(fbx::QuantParams q) {
  const char* n = fbx::EnumNameQuantParams(q);
  return (n && *n) ? n : "unknown";
}

// A quantized value's datatype and parameters that this delegate does not
// run: NOT_SUPPORTED at method load (delegate.cpp looks for kUnsupported).
bool unsupported_quant(std::string* err, uint32_t vid, fbx::DataType dt, fbx::QuantParams qp,
                       const char* where) {
  return fail(err, "value id %u: %s with %s parameters%s is %s", vid, dtype_name(dt),
              quant_params_name(qp), where, kUnsupported);
}

// A constant with a quantized datatype, dequantized into float32 the graph
// owns: (q - zero_point) * scale per tensor, q * scale[c] per channel
// (ChannelQuant: zero point 0, channel c along channel_dim, scales inline or
// in the constant scale_buffer names, float32).
bool read_quantized_constant(pteron_kernel_context* ctx, const fbx::Graph* root,
                             const BlobRegions& r, const fbx::QuantizedTensor* qt,
                             uint32_t ci, Value& v, Graph* g, std::string* err) {
  const fbx::DataType dt = qt->tensor()->dtype();
  const size_t esz = quant_elem_size(dt);
  const fbx::QuantParams qp = qt->quant_type();
  if (esz == 0) return unsupported_quant(err, v.id, dt, qp, " (a constant)");
  const size_t count = numel(v.dims);
  const void* raw = nullptr;
  if (!constant_bytes(ctx, root, r, ci, uint64_t(count) * esz, v.id, "constant", &raw, err))
    return false;
  g->owned_constants.emplace_back(count);
  float* out = g->owned_constants.back().data();
  if (const fbx::TensorQuant* tq = qt->quant_as_TensorQuant()) {
    if (!std::isfinite(tq->scale()))
      return fail(err, "value id %u: scale %g is not finite", v.id, double(tq->scale()));
    const int64_t zp = tq->zero_point();
    if (dt == fbx::DataType::QInt8) {
      const int8_t* q = static_cast<const int8_t*>(raw);
      for (size_t i = 0; i < count; ++i) out[i] = static_cast<float>(q[i] - zp) * tq->scale();
    } else {
      for (size_t i = 0; i < count; ++i)
        out[i] = static_cast<float>(quant_elem(dt, raw, i) - zp) * tq->scale();
    }
    if (dt == fbx::DataType::QInt8 && zp == 0 && !v.dims.empty()) {
      auto qc = std::make_shared<QConstant>();
      qc->q.assign(static_cast<const int8_t*>(raw), static_cast<const int8_t*>(raw) + count);
      qc->scales.assign(v.dims[0], tq->scale());
      v.qconstant = std::move(qc);
    }
  } else if (const fbx::ChannelQuant* cq = qt->quant_as_ChannelQuant()) {
    const int32_t cd = cq->channel_dim();
    if (cd < 0 || size_t(cd) >= v.dims.size())
      return fail(err, "value id %u: channel_dim %d is not a dim of its shape %s", v.id, cd,
                  shape_str(v.dims).c_str());
    const size_t channels = v.dims[size_t(cd)];
    size_t inner = 1;
    for (size_t d = size_t(cd) + 1; d < v.dims.size(); ++d) inner *= v.dims[d];
    const float* scales = nullptr;
    std::vector<float> inline_scales;
    if (cq->scales() && cq->scales()->size() != 0) {
      if (cq->scales()->size() != channels)
        return fail(err, "value id %u: %u scales for %zu channels", v.id, cq->scales()->size(),
                    channels);
      inline_scales.assign(cq->scales()->begin(), cq->scales()->end());
      scales = inline_scales.data();
    } else {
      if (cq->scale_count() != channels)
        return fail(err, "value id %u: scale_count %u for %zu channels", v.id, cq->scale_count(),
                    channels);
      const void* sb = nullptr;
      if (!constant_bytes(ctx, root, r, cq->scale_buffer(), uint64_t(channels) * sizeof(float),
                          v.id, "scale buffer", &sb, err))
        return false;
      inline_scales.resize(channels);
      if (channels) std::memcpy(inline_scales.data(), sb, channels * sizeof(float));
      scales = inline_scales.data();
    }
    for (size_t c = 0; c < channels; ++c)
      if (!std::isfinite(scales[c]))
        return fail(err, "value id %u: the scale of channel %zu, %g, is not finite", v.id, c,
                    double(scales[c]));
    // Element (o, c, i): o over the dims before channel_dim, c the channel, i within it.
    for (size_t i = 0, base = 0; base < count; base += inner, ++i) {
      const float sc = scales[i % channels];
      if (dt == fbx::DataType::QCInt8 || dt == fbx::DataType::QInt8) {
        const int8_t* q = static_cast<const int8_t*>(raw) + base;
        for (size_t k = 0; k < inner; ++k) out[base + k] = static_cast<float>(q[k]) * sc;
      } else {
        for (size_t k = 0; k < inner; ++k)
          out[base + k] = static_cast<float>(quant_elem(dt, raw, base + k)) * sc;
      }
    }
    if (dt == fbx::DataType::QCInt8 && cd == 0) {
      auto qc = std::make_shared<QConstant>();
      qc->q.assign(static_cast<const int8_t*>(raw), static_cast<const int8_t*>(raw) + count);
      qc->scales = inline_scales;
      v.qconstant = std::move(qc);
    }
  } else {
    return unsupported_quant(err, v.id, dt, qp, " (a constant)");
  }
  v.constant = out;
  return true;
}

// A QBInt4 constant with ChannelGroupQuant parameters (torchao's 4-bit groupwise weights, as
// upstream's XNNPACK lowering writes them; the layout was read off programs it exported): [N, K]
// row-major, two weights per byte, element 2i in the low nibble, each stored as q + 8
// (q in [-8, 7]); scales [N, K / group_size], row-major, bfloat16 (a scale buffer of 2 bytes per
// scale) or float32. Dequantized into float32 the graph owns: w = q * scale[n][k / group_size].
bool read_int4_groupwise_constant(pteron_kernel_context* ctx, const fbx::Graph* root,
                                  const BlobRegions& r, const fbx::QuantizedTensor* qt,
                                  uint32_t ci, Value& v, Graph* g, std::string* err) {
  const fbx::ChannelGroupQuant* gq = qt->quant_as_ChannelGroupQuant();
  if (v.dims.size() != 2 || gq->channel_dim() != 0)
    return fail(err, "value id %u: 4-bit groupwise weights of shape %s along dim %d (2-D, dim 0 "
                "expected)", v.id, shape_str(v.dims).c_str(), gq->channel_dim());
  const size_t n = v.dims[0], k = v.dims[1];
  const int32_t gs = gq->group_size();
  if (gs <= 0 || k % size_t(gs) != 0)
    return fail(err, "value id %u: group size %d does not divide %zu", v.id, gs, k);
  const size_t groups = k / size_t(gs), count = n * k, nscales = n * groups;
  const void* raw = nullptr;
  if (!constant_bytes(ctx, root, r, ci, (uint64_t(count) + 1) / 2, v.id, "constant", &raw, err))
    return false;
  std::vector<float> scales(nscales);
  if (gq->scales() && gq->scales()->size() != 0) {
    if (gq->scales()->size() != nscales)
      return fail(err, "value id %u: %u scales for %zu groups", v.id, gq->scales()->size(),
                  nscales);
    std::copy(gq->scales()->begin(), gq->scales()->end(), scales.begin());
  } else {
    if (gq->scale_count() != nscales)
      return fail(err, "value id %u: scale_count %u for %zu groups", v.id, gq->scale_count(),
                  nscales);
    const auto* consts = root->constants();
    const uint32_t sb = gq->scale_buffer();
    if (!consts || sb >= consts->size())
      return fail(err, "value id %u: scale buffer index %u out of range", v.id, sb);
    const bool bf16 = consts->Get(sb)->size() == uint64_t(nscales) * 2;
    const void* p = nullptr;
    if (!constant_bytes(ctx, root, r, sb, uint64_t(nscales) * (bf16 ? 2 : 4), v.id,
                        "scale buffer", &p, err))
      return false;
    for (size_t i = 0; i < nscales; ++i) {
      if (bf16) {
        uint16_t h;
        std::memcpy(&h, static_cast<const char*>(p) + 2 * i, 2);
        const uint32_t bits = uint32_t(h) << 16;
        std::memcpy(&scales[i], &bits, 4);
      } else {
        std::memcpy(&scales[i], static_cast<const char*>(p) + 4 * i, 4);
      }
    }
  }
  for (size_t i = 0; i < nscales; ++i)
    if (!std::isfinite(scales[i]))
      return fail(err, "value id %u: the scale of group %zu, %g, is not finite", v.id, i,
                  double(scales[i]));
  g->owned_constants.emplace_back(count);
  float* out = g->owned_constants.back().data();
  const uint8_t* b = static_cast<const uint8_t*>(raw);
  for (size_t i = 0; i < count; ++i) {
    const int q = int((i & 1) ? (b[i / 2] >> 4) : (b[i / 2] & 0xF)) - 8;
    out[i] = float(q) * scales[(i / k) * groups + (i % k) / size_t(gs)];
  }
  v.constant = out;
  auto q4 = std::make_shared<Q4Constant>();
  q4->n = int64_t(n), q4->k = int64_t(k), q4->group_size = gs;
  q4->codes.assign(b, b + (count + 1) / 2);
  q4->scales = std::move(scales);
  v.q4constant = std::move(q4);
  return true;
}

// A non-constant quantized value: per-tensor QInt8 / QUInt8, or per-token
// dynamic QDInt8 (Value::quant).
bool read_quantized_activation(const fbx::QuantizedTensor* qt, Value& v, std::string* err) {
  const fbx::DataType dt = qt->tensor()->dtype();
  const fbx::QuantParams qp = qt->quant_type();
  Quant& q = v.quant;
  const fbx::TensorQuant* tq = qt->quant_as_TensorQuant();
  if (tq && (dt == fbx::DataType::QInt8 || dt == fbx::DataType::QUInt8)) {
    q.kind = QuantKind::Tensor;
    q.qmin = dt == fbx::DataType::QInt8 ? -128 : 0;
    q.qmax = dt == fbx::DataType::QInt8 ? 127 : 255;
    q.scale = tq->scale();
    q.zero_point = tq->zero_point();
    if (!(q.scale > 0.0f) || !std::isfinite(q.scale))
      return fail(err, "value id %u: scale %g (a finite positive number expected)", v.id,
                  double(q.scale));
    if (q.zero_point < q.qmin || q.zero_point > q.qmax)
      return fail(err, "value id %u: zero point %d lies outside %s's range [%d, %d]", v.id,
                  q.zero_point, dtype_name(dt), q.qmin, q.qmax);
    return true;
  }
  const fbx::TokenDynamicQuant* dq = qt->quant_as_TokenDynamicQuant();
  if (dq && dt == fbx::DataType::QDInt8 && (v.graph_input || v.graph_output))
    return fail(err, "value id %u: a dynamically quantized graph %s is %s", v.id,
                v.graph_input ? "input" : "output", kUnsupported);
  if (dq && dt == fbx::DataType::QDInt8) {
    q.kind = QuantKind::Dynamic;
    q.qmin = -128, q.qmax = 127;
    if (dq->non_batch_dims() < 1 || size_t(dq->non_batch_dims()) > v.dims.size())
      return fail(err, "value id %u: non_batch_dims %d for a tensor of rank %zu", v.id,
                  dq->non_batch_dims(), v.dims.size());
    q.token_dims = uint32_t(dq->non_batch_dims());
    return true;
  }
  return unsupported_quant(err, v.id, dt, qp, "");
}

// Value `i`: a tensor with its id, shape, external index and data; float32,
// or quantized (see Quant in graph.h).
bool read_value(pteron_kernel_context* ctx, const fbx::Graph* root, const BlobRegions& r,
                uint32_t i, Graph* g, ValueIds* ids, std::string* err) {
  const fbx::Value* fv = root->values()->Get(i);
  Value& v = g->values[i];
  if (fv && fv->kind_type() == fbx::ValueKind::QuantizedTensor) {
    const fbx::QuantizedTensor* qt = fv->kind_as_QuantizedTensor();
    if (!qt || !qt->tensor()) return fail(err, "value %u is a quantized tensor without a tensor", i);
    if (!read_tensor_fields(root, qt->tensor(), i, v, ids, err)) return false;
    if (qt->tensor()->constant_index() != 0) {
      if (qt->tensor()->dtype() == fbx::DataType::QBInt4 &&
          qt->quant_type() == fbx::QuantParams::ChannelGroupQuant)
        return read_int4_groupwise_constant(ctx, root, r, qt, qt->tensor()->constant_index(), v,
                                            g, err);
      return read_quantized_constant(ctx, root, r, qt, qt->tensor()->constant_index(), v, g, err);
    }
    return read_quantized_activation(qt, v, err);
  }
  const fbx::Tensor* t = nullptr;
  if (fv && fv->kind_type() == fbx::ValueKind::Tensor) t = fv->kind_as_Tensor();
  if (!t) return fail(err, "value %u is not a tensor", i);
  if (t->dtype() != fbx::DataType::F32 && t->dtype() != fbx::DataType::F16)
    return fail(err, "value %u (id %u): datatype %s is %s", i, t->id(), dtype_name(t->dtype()),
                kUnsupported);
  if (!read_tensor_fields(root, t, i, v, ids, err)) return false;
  v.half = t->dtype() == fbx::DataType::F16;
  if (t->constant_index() != 0)
    return v.half ? read_half_constant(ctx, root, r, t->constant_index(), v, g, err)
                  : read_constant(ctx, root, r, t->constant_index(), v, g, err);
  return true;
}

bool read_values(pteron_kernel_context* ctx, const fbx::Graph* root, const BlobRegions& r, Graph* g,
                 ValueIds* ids, std::string* err) {
  const uint32_t nvals = root->values()->size();
  g->values.resize(nvals);
  for (uint32_t i = 0; i < nvals; ++i)
    if (!read_value(ctx, root, r, i, g, ids, err)) return false;
  g->num_externals = root->num_externals();
  ids->count = nvals;
  return true;
}

// ---- graph inputs and outputs ---------------------------------------------------

bool ids_to_indices(const ValueIds& ids, const flatbuffers::Vector<uint32_t>* list,
                    std::vector<uint32_t>* out, const char* what, std::string* err) {
  if (!list) return fail(err, "the graph has no %s list", what);
  for (uint32_t id : *list) {
    uint32_t idx;
    if (!ids.find(id, &idx))
      return fail(err,
                  "graph %s refers to value id %u, which is out of range (the graph "
                  "defines %u values)",
                  what, id, ids.count);
    out->push_back(idx);
  }
  return true;
}

// The graph's inputs and outputs: every one an external value, and together
// exactly the externals the graph declares.
bool read_graph_io(const fbx::Graph* root, const ValueIds& ids, Graph* g, std::string* err) {
  if (!ids_to_indices(ids, root->inputs(), &g->inputs, "input", err)) return false;
  if (!ids_to_indices(ids, root->outputs(), &g->outputs, "output", err)) return false;
  if (g->num_externals != g->inputs.size() + g->outputs.size())
    return fail(err, "the graph declares %u external values but has %zu inputs and %zu outputs",
                g->num_externals, g->inputs.size(), g->outputs.size());
  for (uint32_t i : g->inputs)
    if (g->values[i].external == kNoValue)
      return fail(err, "graph input value id %u is not external", g->values[i].id);
  for (uint32_t i : g->outputs)
    if (g->values[i].external == kNoValue)
      return fail(err, "graph output value id %u is not external", g->values[i].id);
  return true;
}

}  // namespace

bool parse_blob(pteron_kernel_context* ctx, const uint8_t* blob, size_t size, Graph* g,
                std::string* err) {
  BlobRegions regions;
  if (!locate_regions(blob, size, &regions, err)) return false;
  std::vector<uint64_t> aligned;
  const fbx::Graph* root = verify_graph(regions, &aligned, err);
  if (!root) return false;
  ValueIds ids;
  if (!read_values(ctx, root, regions, g, &ids, err)) return false;
  if (!read_graph_io(root, ids, g, err)) return false;
  const auto* nodes = root->nodes();
  g->nodes.resize(nodes->size());
  for (uint32_t k = 0; k < nodes->size(); ++k)
    if (!read_node(nodes->Get(k), k, ids, g, err)) return false;
  return true;
}

}  // namespace xnnpack
}  // namespace pteron
