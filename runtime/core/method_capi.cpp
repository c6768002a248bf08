// SPDX-License-Identifier: BSD-3-Clause
// method_capi.cpp - the C API of a method (pteron.h): load and release,
// input and output descriptions, setting inputs, execute, copying outputs.
// Each function checks its arguments, turns a Status into a pteron_status
// and never lets an exception cross the boundary.
#include <cmath>
#include <cstring>
#include <new>

#include "method.h"

using namespace pteron;

namespace {

// A dtype's name, or its ScalarType code when pteron has none (float8, bits16, sub-byte
// quantized types: pteron/types.h).
std::string dtype_label(int32_t d) {
  const std::string name = dtype_name(d);
  if (name != "unknown") return name;
  return "ScalarType " + std::to_string(d) + " (which pteron does not support)";
}

// NOT_FOUND when `index` is past the method's inputs (outputs false) or outputs (true); NULL
// otherwise. Every accessor of one input or output gives this message.
pteron_status* index_error(const pteron_method* m, size_t index, bool outputs) {
  const auto& list = outputs ? m->outputs : m->inputs;
  if (index < list.size()) return nullptr;
  const char* which = outputs ? "output" : "input";
  return to_c(error(PTERON_ERROR_NOT_FOUND, "%s index %zu out of range (method '%s' has %zu %ss)",
                    which, index, m->name.c_str(), list.size(), which));
}

// INVALID_ARGUMENT for reading output `index` before a successful execute.
pteron_status* not_executed(const pteron_method* m, size_t index) {
  return to_c(error(PTERON_ERROR_INVALID_ARGUMENT,
                    "output %zu of method '%s' has no value: the method has not executed "
                    "successfully (no pteron_method_execute yet, or the last one failed)",
                    index, m->name.c_str()));
}

void fill_info(const pteron_value& v, pteron_value_info* info) {
  std::memset(info, 0, sizeof *info);
  info->tag = v.tag;
  switch (v.tag) {
    case PTERON_VALUE_TENSOR: {
      const pteron_tensor* t = v.u.tensor;
      info->dtype = t->dtype;
      info->dim = t->dim;
      info->dynamism = t->dynamism;
      for (int32_t d = 0; d < t->dim; ++d) {
        info->sizes[d] = t->sizes[d];
        info->bound[d] = t->bound[d];
        info->dim_order[d] = t->dim_order[d];
      }
      info->data = t->data;
      info->nbytes = static_cast<size_t>(tensor_numel(*t)) * element_size(t->dtype);
      break;
    }
    case PTERON_VALUE_INT: info->scalar = static_cast<double>(v.u.i); break;
    case PTERON_VALUE_DOUBLE: info->scalar = v.u.d; break;
    case PTERON_VALUE_BOOL: info->scalar = static_cast<double>(v.u.b); break;
    default: break;
  }
}

// A scalar input given as a double (is_int false) or as an int64 (is_int true): only the value
// the method was exported with is accepted, compared exactly.
pteron_status* set_input_number(pteron_method* m, size_t index, bool is_int, int64_t ivalue,
                                double dvalue) {
  if (!m) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "method is NULL"));
  std::lock_guard<std::mutex> lock(m->call_mutex);
  if (pteron_status* s = index_error(m, index, false)) return s;
  pteron_value& v = m->values[m->inputs[index]];
  // The exporter specialises a method on the value of a scalar input (it is
  // baked into the program), so only that value is accepted.
  if (v.tag == PTERON_VALUE_INT) {
    // A double matches only when it is whole, within int64 and equal to the value exactly.
    const bool match = is_int ? ivalue == v.u.i
                              : dvalue >= -9223372036854775808.0 &&
                                    dvalue < 9223372036854775808.0 &&
                                    std::trunc(dvalue) == dvalue &&
                                    static_cast<int64_t>(dvalue) == v.u.i;
    if (!match) {
      if (is_int)
        return to_c(error(PTERON_ERROR_INVALID_ARGUMENT,
                          "input %zu: the method was exported for the int %lld, got %lld", index,
                          (long long)v.u.i, (long long)ivalue));
      return to_c(error(PTERON_ERROR_INVALID_ARGUMENT,
                        "input %zu: the method was exported for the int %lld, got %.17g", index,
                        (long long)v.u.i, dvalue));
    }
    m->input_set[index] = true;
    return nullptr;
  }
  double expected;
  switch (v.tag) {
    case PTERON_VALUE_DOUBLE: expected = v.u.d; break;
    case PTERON_VALUE_BOOL: expected = v.u.b ? 1.0 : 0.0; break;
    default:
      return to_c(
          error(PTERON_ERROR_INVALID_ARGUMENT, "input %zu is not an Int, Double or Bool", index));
  }
  const double value = is_int ? static_cast<double>(ivalue) : dvalue;
  if (!(value == expected))
    return to_c(error(PTERON_ERROR_INVALID_ARGUMENT,
                      "input %zu: the method was exported for the value %.17g, got %.17g", index,
                      expected, value));
  m->input_set[index] = true;
  return nullptr;
}

}  // namespace

extern "C" {

pteron_status* pteron_method_load(pteron_program* p, const char* name,
                                  const pteron_method_options* options, pteron_method** out) {
  if (!p || !out) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "program or out is NULL"));
  *out = nullptr;
  auto* m = new (std::nothrow) pteron_method;
  if (!m) return to_c(error(PTERON_ERROR_OUT_OF_MEMORY, "cannot allocate a method"));
  const uint64_t t_load = profile_clock_ns();
  p->refs.fetch_add(1);
  m->program = p;
  Status s;
  try {
    const uint64_t t_init = profile_clock_ns();
    s = load_method(p, name, options, m);
    if (s.ok()) {  // method load's timings, as upstream's runtime names them (pteron.h)
      Profile& pr = m->profile;
      const uint64_t t_end = profile_clock_ns();
      pr.load.push_back({-1, pr.intern("Method::init"), -1, 0, -1, -1, t_init, t_end});
      pr.load.push_back({-1, pr.intern("Program::load_method"), -1, 0, -1, -1, t_load, t_end});
    }
  } catch (const std::bad_alloc&) {
    s = error(PTERON_ERROR_OUT_OF_MEMORY, "out of memory while loading method '%s'",
              name ? name : "");
  } catch (...) {
    s = error(PTERON_ERROR_INTERNAL, "unexpected failure while loading method '%s'",
              name ? name : "");
  }
  if (!s.ok()) {
    delete m;
    return to_c(s);
  }
  *out = m;
  return nullptr;
}

void pteron_method_release(pteron_method* m) { delete m; }

size_t pteron_method_input_count(const pteron_method* m) { return m ? m->inputs.size() : 0; }
size_t pteron_method_output_count(const pteron_method* m) { return m ? m->outputs.size() : 0; }

namespace {
// The info of entry `index` of the method's inputs or outputs (`which`).
pteron_status* io_info(const pteron_method* m, size_t index, pteron_value_info* info,
                       bool outputs) {
  if (!m || !info) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "method or info is NULL"));
  std::lock_guard<std::mutex> lock(m->call_mutex);
  if (pteron_status* s = index_error(m, index, outputs)) return s;
  fill_info(m->values[(outputs ? m->outputs : m->inputs)[index]], info);
  return nullptr;
}
}  // namespace

pteron_status* pteron_method_input_info(const pteron_method* m, size_t index,
                                        pteron_value_info* info) {
  return io_info(m, index, info, false);
}

pteron_status* pteron_method_output_info(const pteron_method* m, size_t index,
                                         pteron_value_info* info) {
  return io_info(m, index, info, true);
}

pteron_status* pteron_method_set_input(pteron_method* m, size_t index, int32_t dtype,
                                       const int64_t* sizes, int32_t dim, const void* data,
                                       size_t nbytes) {
  if (!m) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "method is NULL"));
  std::lock_guard<std::mutex> lock(m->call_mutex);
  if (pteron_status* s = index_error(m, index, false)) return s;
  pteron_value& v = m->values[m->inputs[index]];
  if (v.tag != PTERON_VALUE_TENSOR)
    return to_c(error(PTERON_ERROR_INVALID_ARGUMENT,
                      "input %zu is not a tensor; use pteron_method_set_input_scalar", index));
  pteron_tensor* t = v.u.tensor;
  if (dtype != t->dtype)
    return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "input %zu: expected dtype %s, got %s", index,
                      dtype_label(t->dtype).c_str(), dtype_label(dtype).c_str()));
  if (dim > 0 && !sizes)
    return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "input %zu: sizes is NULL for rank %d",
                      index, dim));
  if (dim != t->dim)
    return to_c(error(PTERON_ERROR_SHAPE_MISMATCH, "input %zu: expected rank %d, got rank %d",
                      index, t->dim, dim));
  int64_t numel = 1;
  for (int32_t d = 0; d < dim; ++d) {
    if (sizes[d] < 0)
      return to_c(error(PTERON_ERROR_SHAPE_MISMATCH, "input %zu: negative size %lld at dim %d",
                        index, (long long)sizes[d], d));
    if (t->dynamism == PTERON_SHAPE_STATIC && sizes[d] != t->bound[d])
      return to_c(error(PTERON_ERROR_SHAPE_MISMATCH,
                        "input %zu: dim %d has size %lld, the method's static shape needs %lld",
                        index, d, (long long)sizes[d], (long long)t->bound[d]));
    if (sizes[d] > t->bound[d])
      return to_c(error(PTERON_ERROR_SHAPE_MISMATCH,
                        "input %zu: dim %d has size %lld, beyond its upper bound %lld", index, d,
                        (long long)sizes[d], (long long)t->bound[d]));
    numel *= sizes[d];
  }
  size_t need = static_cast<size_t>(numel) * element_size(t->dtype);
  if (need && !data)
    return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "input %zu: data is NULL for %zu bytes",
                      index, need));
  if (nbytes != need)
    return to_c(error(PTERON_ERROR_INVALID_ARGUMENT,
                      "input %zu: %zu bytes given, shape and dtype need %zu", index, nbytes, need));
  if (static_cast<int64_t>(need) > t->capacity_bytes || (need && !t->data))
    return to_c(error(PTERON_ERROR_SHAPE_MISMATCH,
                      "input %zu: %zu bytes exceed its storage (%lld bytes)", index, need,
                      (long long)t->capacity_bytes));
  for (int32_t d = 0; d < dim; ++d) t->sizes[d] = sizes[d];
  compute_strides(t);
  try {
    m->staged[index].assign(static_cast<const unsigned char*>(data),
                            static_cast<const unsigned char*>(data) + need);
  } catch (...) {
    return to_c(error(PTERON_ERROR_OUT_OF_MEMORY, "input %zu: cannot copy %zu bytes", index, need));
  }
  m->input_set[index] = true;
  return nullptr;
}

pteron_status* pteron_method_set_input_scalar(pteron_method* m, size_t index, double value) {
  return set_input_number(m, index, false, 0, value);
}

pteron_status* pteron_method_set_input_int(pteron_method* m, size_t index, int64_t value) {
  return set_input_number(m, index, true, value, 0.0);
}

pteron_status* pteron_method_execute(pteron_method* m) {
  if (!m) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "method is NULL"));
  std::lock_guard<std::mutex> lock(m->call_mutex);
  m->outputs_ready = false;  // a failed execute leaves outputs half-written
  try {
    Status st = execute(m);
    m->outputs_ready = st.ok();
    return to_c(std::move(st));
  } catch (const std::bad_alloc&) {
    return to_c(error(PTERON_ERROR_OUT_OF_MEMORY, "out of memory during execute"));
  } catch (...) {
    return to_c(error(PTERON_ERROR_INTERNAL, "unexpected failure during execute"));
  }
}

pteron_status* pteron_method_output_int(const pteron_method* m, size_t index, int64_t* value) {
  if (!m || !value) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "method or value is NULL"));
  std::lock_guard<std::mutex> lock(m->call_mutex);
  if (pteron_status* s = index_error(m, index, true)) return s;
  const pteron_value& v = m->values[m->outputs[index]];
  if (v.tag != PTERON_VALUE_INT && v.tag != PTERON_VALUE_BOOL)
    return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "output %zu is not an Int or Bool", index));
  if (!m->outputs_ready) return not_executed(m, index);
  *value = v.tag == PTERON_VALUE_INT ? v.u.i : (v.u.b ? 1 : 0);
  return nullptr;
}

pteron_status* pteron_method_copy_output(const pteron_method* m, size_t index, void* dst,
                                         size_t capacity) {
  if (!m) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "method is NULL"));
  std::lock_guard<std::mutex> lock(m->call_mutex);
  if (pteron_status* s = index_error(m, index, true)) return s;
  const pteron_value& v = m->values[m->outputs[index]];
  if (v.tag != PTERON_VALUE_TENSOR)
    return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "output %zu is not a tensor", index));
  if (!m->outputs_ready) return not_executed(m, index);
  const pteron_tensor* t = v.u.tensor;
  int64_t numel = tensor_numel(*t);
  size_t es = element_size(t->dtype);
  size_t need = static_cast<size_t>(numel) * es;
  if (need && !dst)
    return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "output %zu: dst is NULL for %zu bytes",
                      index, need));
  if (capacity < need)
    return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "output %zu needs %zu bytes, capacity is %zu",
                      index, need, capacity));
  if (need == 0) return nullptr;
  if (!t->data) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "output %zu has no data", index));
  bool contiguous = true;
  for (int32_t d = 0; d < t->dim; ++d) contiguous = contiguous && t->dim_order[d] == d;
  if (contiguous) {
    std::memcpy(dst, t->data, need);
    return nullptr;
  }
  int64_t idx[PTERON_MAX_DIM] = {0};
  for (int64_t n = 0; n < numel; ++n) {
    int64_t off = 0;
    for (int32_t d = 0; d < t->dim; ++d) off += idx[d] * t->strides[d];
    std::memcpy(static_cast<char*>(dst) + n * es, static_cast<const char*>(t->data) + off * es, es);
    for (int32_t d = t->dim - 1; d >= 0; --d) {
      if (++idx[d] < t->sizes[d]) break;
      idx[d] = 0;
    }
  }
  return nullptr;
}

}  // extern "C"
