// SPDX-License-Identifier: BSD-3-Clause
// method_load.cpp - method load: an execution plan of the program becomes a
// pteron_method. Its values are built (scalars, tensors, then the lists that
// refer to them), every tensor is placed (constant data in the program, a
// memory-planned buffer, or storage the runtime owns), its inputs and
// outputs are checked, then resolve.cpp builds its chains.
//
// Load resolves everything before the first execute: a method that cannot
// run fails here, naming what is wrong.
#include <cstddef>
#include <cstring>

#include "method.h"

namespace pteron {

Status check_value_index(const pteron_method* m, int64_t idx, const char* what) {
  if (idx < 0 || static_cast<size_t>(idx) >= m->values.size())
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "%s refers to value %lld, but the method has %zu values", what, (long long)idx,
                 m->values.size());
  return Status::Ok();
}

namespace {

// ---- tensors ----------------------------------------------------------------

// Dtype, sizes (also the bound), dim order, strides and dynamism of tensor
// value `i`; *nbytes is its byte size at those sizes.
Status read_tensor_shape(size_t i, const fb::Tensor* ft, pteron_tensor* t, int64_t* nbytes) {
  std::memset(t, 0, sizeof *t);
  t->dtype = static_cast<int32_t>(ft->scalar_type());
  size_t esize = element_size(t->dtype);
  if (esize == 0)
    return error(PTERON_ERROR_INVALID_PROGRAM, "value %zu: unknown scalar type %d", i, t->dtype);
  const auto* sizes = ft->sizes();
  uint32_t dim = sizes ? sizes->size() : 0;
  if (dim > PTERON_MAX_DIM)
    return error(PTERON_ERROR_INVALID_PROGRAM, "value %zu: rank %u exceeds the maximum of %d", i,
                 dim, PTERON_MAX_DIM);
  t->dim = static_cast<int32_t>(dim);
  int64_t numel = 1;
  int64_t span = 1;  // product with 0-sized dims counted as 1, as strides are
  for (uint32_t d = 0; d < dim; ++d) {
    int32_t s = sizes->Get(d);
    if (s < 0 || !checked_mul(numel, s, &numel) || !checked_mul(span, s > 0 ? s : 1, &span))
      return error(PTERON_ERROR_INVALID_PROGRAM, "value %zu: invalid size %d at dim %u", i, s, d);
    t->sizes[d] = s;
    t->bound[d] = s;
  }
  const auto* order = ft->dim_order();
  if (order && order->size() > 0) {
    if (order->size() != dim)
      return error(PTERON_ERROR_INVALID_PROGRAM, "value %zu: dim order has %u entries for rank %u",
                   i, order->size(), dim);
    bool seen[PTERON_MAX_DIM] = {false};
    for (uint32_t d = 0; d < dim; ++d) {
      uint8_t o = order->Get(d);
      if (o >= dim || seen[o])
        return error(PTERON_ERROR_INVALID_PROGRAM, "value %zu: dim order is not a permutation", i);
      seen[o] = true;
      t->dim_order[d] = o;
    }
  } else {
    for (uint32_t d = 0; d < dim; ++d) t->dim_order[d] = static_cast<uint8_t>(d);
  }
  compute_strides(t);
  t->dynamism = static_cast<int32_t>(ft->shape_dynamism());
  if (t->dynamism < PTERON_SHAPE_STATIC || t->dynamism > PTERON_SHAPE_DYNAMIC_UNBOUND)
    return error(PTERON_ERROR_INVALID_PROGRAM, "value %zu: invalid shape dynamism %d", i,
                 t->dynamism);
  if (!checked_mul(numel, static_cast<int64_t>(esize), nbytes))
    return error(PTERON_ERROR_INVALID_PROGRAM, "value %zu: tensor byte size overflows", i);
  t->capacity_bytes = *nbytes;
  return Status::Ok();
}

// A constant: the data lies in the program (buffer `data_buffer_idx`).
Status place_constant(pteron_method* m, size_t i, const fb::Tensor* ft, pteron_tensor* t,
                      int64_t nbytes) {
  const size_t esize = element_size(t->dtype);
  const uint8_t* p;
  Status s = m->program->constant(ft->data_buffer_idx(), static_cast<size_t>(nbytes), &p);
  if (!s.ok()) return error(s.code, "value %zu: %s", i, s.message.c_str());
  // The program's bytes are a private copy-on-write mapping or our own
  // copy, so a kernel that writes here cannot corrupt the file.
  t->data = const_cast<uint8_t*>(p);
  t->dynamism = PTERON_SHAPE_STATIC;
  // Kernels read elements in place: the data must be aligned to them.
  if (reinterpret_cast<uintptr_t>(t->data) % esize != 0)
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "value %zu: constant data (buffer %u) is not aligned to its %zu-byte elements", i,
                 ft->data_buffer_idx(), esize);
  if (t->dtype == PTERON_DTYPE_BOOL) normalize_bools(t->data, static_cast<size_t>(nbytes));
  return Status::Ok();
}

// A memory-planned tensor: `nbytes` at an offset in one of the planned buffers.
Status place_planned(pteron_method* m, size_t i, const fb::AllocationDetails* alloc,
                     pteron_tensor* t, int64_t nbytes, const std::vector<size_t>& buffer_sizes) {
  const size_t esize = element_size(t->dtype);
  uint32_t id = alloc->memory_id();
  uint64_t off = uint64_t(alloc->memory_offset_high()) << 32 | alloc->memory_offset_low();
  if (id == 0 || id >= buffer_sizes.size() + 1)
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "value %zu: memory id %u out of range (%zu planned buffers)", i, id,
                 buffer_sizes.size());
  size_t bsize = buffer_sizes[id - 1];
  if (off > bsize || static_cast<uint64_t>(nbytes) > bsize - off)
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "value %zu: %lld bytes at offset %llu lie outside planned buffer %u (%zu bytes)",
                 i, (long long)nbytes, (unsigned long long)off, id, bsize);
  t->data = static_cast<uint8_t*>(m->planned[id - 1].data) + off;
  if (reinterpret_cast<uintptr_t>(t->data) % esize != 0)
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "value %zu: offset %llu in planned buffer %u is not aligned to its %zu-byte "
                 "elements",
                 i, (unsigned long long)off, id, esize);
  return Status::Ok();
}

// Counts `bytes` against the method's memory budget (pteron_method_options
// max_allocated_bytes) before they are allocated for `what`.
Status charge(pteron_method* m, uint64_t bytes, const std::string& what) {
  if (m->max_allocated_bytes && (bytes > m->max_allocated_bytes ||
                                 m->allocated_bytes > m->max_allocated_bytes - bytes))
    return error(PTERON_ERROR_OUT_OF_MEMORY,
                 "%s needs %llu bytes, beyond the method's memory budget of %llu bytes "
                 "(max_allocated_bytes; %llu allocated before it)",
                 what.c_str(), (unsigned long long)bytes,
                 (unsigned long long)m->max_allocated_bytes,
                 (unsigned long long)m->allocated_bytes);
  m->allocated_bytes += bytes;
  return Status::Ok();
}

// Neither constant nor planned: the runtime owns storage of the bound size.
Status place_owned(pteron_method* m, size_t i, pteron_tensor* t, int64_t nbytes) {
  if (nbytes > 0) {
    Status s = charge(m, uint64_t(nbytes), format("value %zu", i));
    if (!s.ok()) return s;
    AlignedBlock b;
    if (!b.alloc(static_cast<size_t>(nbytes)))
      return error(PTERON_ERROR_OUT_OF_MEMORY, "value %zu: cannot allocate %lld bytes", i,
                   (long long)nbytes);
    t->data = b.data;
    m->owned.push_back(std::move(b));
  }
  return Status::Ok();
}

// "value N" or "value N ('name')" for messages about tensor value `i`.
std::string tensor_label(size_t i, const fb::Tensor* ft) {
  const fb::ExtraTensorInfo* x = ft->extra_tensor_info();
  if (x && x->fully_qualified_name())
    return format("value %zu ('%s')", i, printable(x->fully_qualified_name()->str()).c_str());
  return format("value %zu", i);
}

// A mutable buffer exported with its initial state (upstream's
// InitializedMutableBufferPass): data_buffer_idx names an entry of a mutable
// data segment (extra_tensor_info.mutable_data_segments_idx, 0 by default),
// copied into the tensor's planned memory. Every method load does this, so a
// new method instance starts from the initial state, as upstream's does.
Status load_initial_state(pteron_method* m, size_t i, const fb::Tensor* ft, pteron_tensor* t,
                          int64_t nbytes) {
  const fb::ExtraTensorInfo* x = ft->extra_tensor_info();
  const uint64_t segs_idx = x ? x->mutable_data_segments_idx() : 0;
  const uint8_t* p;
  Status s =
      m->program->mutable_data(segs_idx, ft->data_buffer_idx(), static_cast<size_t>(nbytes), &p);
  if (!s.ok()) return error(s.code, "%s: %s", tensor_label(i, ft).c_str(), s.message.c_str());
  if (nbytes > 0) std::memcpy(t->data, p, static_cast<size_t>(nbytes));
  if (t->dtype == PTERON_DTYPE_BOOL) normalize_bools(t->data, static_cast<size_t>(nbytes));
  return Status::Ok();
}

// A tensor whose data lies in the program's data file (.ptd) under its fully
// qualified name. The entry's layout must match the program's tensor, as
// upstream checks it. A constant points into the data file; a planned tensor
// (a mutable weight) gets a copy in its planned memory.
Status place_external(pteron_method* m, size_t i, const fb::Tensor* ft, pteron_tensor* t,
                      int64_t nbytes, bool planned) {
  const auto* fqn = ft->extra_tensor_info()->fully_qualified_name();
  if (!fqn)
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "value %zu: tensor is external but has no fully qualified name (its key)", i);
  const std::string key = printable(fqn->str());
  const DataFile* df = m->program->data_file.get();
  if (!df)
    return error(PTERON_ERROR_NOT_FOUND,
                 "value %zu: tensor '%s' keeps its data in an external data file (.ptd) under "
                 "key '%s', and the program was loaded without one (load it with its data file: "
                 "pteron_program_load_file_with_data, pteron-run --data)",
                 i, key.c_str(), key.c_str());
  const ft::NamedData* e = df->find(fqn->c_str());
  if (!e)
    return error(PTERON_ERROR_NOT_FOUND, "value %zu: data file %s has no entry with key '%s'", i,
                 df->name.c_str(), key.c_str());
  const ft::TensorLayout* lay = e->tensor_layout();
  if (!lay)
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "value %zu: data file %s entry '%s' is not a tensor (no layout)", i,
                 df->name.c_str(), key.c_str());
  bool same = lay->scalar_type() == static_cast<int8_t>(t->dtype);
  const uint32_t ld = lay->sizes() ? lay->sizes()->size() : 0u;
  same = same && ld == static_cast<uint32_t>(t->dim);
  for (uint32_t d = 0; same && d < ld; ++d) same = lay->sizes()->Get(d) == t->sizes[d];
  if (same && lay->dim_order() && lay->dim_order()->size() > 0) {
    same = lay->dim_order()->size() == ld;
    for (uint32_t d = 0; same && d < ld; ++d) same = lay->dim_order()->Get(d) == t->dim_order[d];
  }
  if (!same) {
    std::string got;
    for (uint32_t d = 0; d < ld; ++d) got += format("%s%d", d ? ", " : "", lay->sizes()->Get(d));
    std::string want;
    for (int32_t d = 0; d < t->dim; ++d)
      want += format("%s%lld", d ? ", " : "", (long long)t->sizes[d]);
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "value %zu: data file %s entry '%s' is %s [%s], the program's tensor is %s [%s] "
                 "(or their dim orders differ)",
                 i, df->name.c_str(), key.c_str(), dtype_name(lay->scalar_type()), got.c_str(),
                 dtype_name(t->dtype), want.c_str());
  }
  const uint8_t* p;
  size_t size;
  Status s = df->entry_bytes(e, &p, &size);
  if (!s.ok()) return error(s.code, "value %zu: %s", i, s.message.c_str());
  if (size < static_cast<size_t>(nbytes))
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "value %zu: data file %s entry '%s' holds %zu bytes, the tensor needs %lld", i,
                 df->name.c_str(), key.c_str(), size, (long long)nbytes);
  if (planned) {
    if (nbytes > 0) std::memcpy(t->data, p, static_cast<size_t>(nbytes));
  } else {
    const size_t esize = element_size(t->dtype);
    // The data file's bytes are a private copy-on-write mapping or our own copy.
    t->data = const_cast<uint8_t*>(p);
    t->dynamism = PTERON_SHAPE_STATIC;
    if (reinterpret_cast<uintptr_t>(t->data) % esize != 0)
      return error(PTERON_ERROR_INVALID_PROGRAM,
                   "value %zu: data file %s entry '%s' is not aligned to its %zu-byte elements", i,
                   df->name.c_str(), key.c_str(), esize);
  }
  if (t->dtype == PTERON_DTYPE_BOOL) normalize_bools(t->data, static_cast<size_t>(nbytes));
  return Status::Ok();
}

// Builds tensor value `i`: shape, dim order, data placement. The placements:
//  - external (extra_tensor_info.location EXTERNAL): in the data file, by
//    name (a planned one is copied into its planned memory);
//  - constant (data_buffer_idx > 0, no allocation_info): in the program;
//  - planned (allocation_info): in a planned buffer, and when data_buffer_idx
//    is also set, a mutable buffer whose initial state is copied there;
//  - otherwise storage the runtime owns.
Status build_tensor(pteron_method* m, size_t i, const fb::Tensor* ft,
                    const std::vector<size_t>& buffer_sizes) {
  pteron_tensor& t = m->tensors[i];
  int64_t nbytes = 0;
  Status s = read_tensor_shape(i, ft, &t, &nbytes);
  if (!s.ok()) return s;
  const fb::AllocationDetails* alloc = ft->allocation_info();
  const bool external = ft->extra_tensor_info() &&
                        ft->extra_tensor_info()->location() == fb::TensorDataLocation::EXTERNAL;
  if (alloc) {
    s = place_planned(m, i, alloc, &t, nbytes, buffer_sizes);
    if (!s.ok()) return s;
    if (external) return place_external(m, i, ft, &t, nbytes, true);
    if (ft->data_buffer_idx() > 0) return load_initial_state(m, i, ft, &t, nbytes);
    return Status::Ok();
  }
  if (external) return place_external(m, i, ft, &t, nbytes, false);
  if (ft->data_buffer_idx() > 0) return place_constant(m, i, ft, &t, nbytes);
  return place_owned(m, i, &t, nbytes);
}

// ---- planned buffers --------------------------------------------------------

// The method's planned buffers: the caller's (options) or allocated here.
// *sizes receives the byte size the program declares for each.
Status place_planned_buffers(pteron_method* m, const pteron_method_options* opts,
                             std::vector<size_t>* sizes) {
  const auto* bs = m->plan->non_const_buffer_sizes();
  size_t nb = (bs && bs->size() > 0) ? bs->size() - 1 : 0;
  sizes->assign(nb, 0);
  const bool supplied = opts && opts->num_planned_buffers;
  if (supplied) {
    if (opts->num_planned_buffers != nb || !opts->planned_buffers)
      return error(PTERON_ERROR_INVALID_ARGUMENT,
                   "method '%s' has %zu planned buffers, the caller supplied %zu", m->name.c_str(),
                   nb, opts->num_planned_buffers);
  }
  m->planned.resize(nb);
  for (size_t k = 0; k < nb; ++k) {
    int64_t s = bs->Get(static_cast<uint32_t>(k + 1));
    if (s < 0)
      return error(PTERON_ERROR_INVALID_PROGRAM, "planned buffer %zu has negative size %lld", k + 1,
                   (long long)s);
    (*sizes)[k] = static_cast<size_t>(s);
    if (supplied) {
      const pteron_buffer& ub = opts->planned_buffers[k];
      if (!ub.data || ub.size < (*sizes)[k])
        return error(PTERON_ERROR_INVALID_ARGUMENT,
                     "supplied planned buffer %zu holds %zu bytes, the method needs %zu", k,
                     ub.size, (*sizes)[k]);
      m->planned[k].data = ub.data;  // not owned (raw stays NULL)
      m->planned[k].size = ub.size;
    } else if (Status c = charge(m, (*sizes)[k], format("planned buffer %zu", k + 1)); !c.ok()) {
      return c;
    } else if (!m->planned[k].alloc((*sizes)[k] ? (*sizes)[k] : 1)) {
      return error(PTERON_ERROR_OUT_OF_MEMORY, "cannot allocate planned buffer %zu (%zu bytes)",
                   k + 1, (*sizes)[k]);
    }
  }
  return Status::Ok();
}

// ---- values -----------------------------------------------------------------

// Pass 1 for value `i`: None, scalars, strings, double/bool lists, tensors.
// Int lists and tensor lists refer to other values and wait for pass 2.
Status build_direct_value(pteron_method* m, size_t i, const fb::EValue* ev,
                          const std::vector<size_t>& buffer_sizes) {
  pteron_value& v = m->values[i];
  v.tag = PTERON_VALUE_NONE;
  if (!ev) return Status::Ok();
  // The flatbuffers verifier accepts a union type whose payload is absent.
  if (ev->val_type() != fb::KernelTypes::NONE && ev->val_type() != fb::KernelTypes::Null &&
      !ev->val())
    return error(PTERON_ERROR_INVALID_PROGRAM, "value %zu has type %d but no payload", i,
                 static_cast<int>(ev->val_type()));
  switch (ev->val_type()) {
    case fb::KernelTypes::NONE:
    case fb::KernelTypes::Null: v.tag = PTERON_VALUE_NONE; break;
    case fb::KernelTypes::Int:
      v.tag = PTERON_VALUE_INT;
      v.u.i = ev->val_as_Int()->int_val();
      break;
    case fb::KernelTypes::Bool:
      v.tag = PTERON_VALUE_BOOL;
      v.u.b = ev->val_as_Bool()->bool_val() ? 1 : 0;
      break;
    case fb::KernelTypes::Double:
      v.tag = PTERON_VALUE_DOUBLE;
      v.u.d = ev->val_as_Double()->double_val();
      break;
    case fb::KernelTypes::String: {
      v.tag = PTERON_VALUE_STRING;
      const auto* s = ev->val_as_String()->string_val();
      v.u.string.data = s ? s->c_str() : "";
      v.u.string.size = s ? s->size() : 0;
      break;
    }
    case fb::KernelTypes::Tensor: {
      Status s = build_tensor(m, i, ev->val_as_Tensor(), buffer_sizes);
      if (!s.ok()) return s;
      v.tag = PTERON_VALUE_TENSOR;
      v.u.tensor = &m->tensors[i];
      break;
    }
    case fb::KernelTypes::DoubleList: {
      v.tag = PTERON_VALUE_DOUBLE_LIST;
      const auto* items = ev->val_as_DoubleList()->items();
      v.u.double_list.data = items ? items->data() : nullptr;
      v.u.double_list.size = items ? items->size() : 0;
      break;
    }
    case fb::KernelTypes::BoolList: {
      v.tag = PTERON_VALUE_BOOL_LIST;
      const auto* items = ev->val_as_BoolList()->items();
      v.u.bool_list.data = items ? reinterpret_cast<const uint8_t*>(items->data()) : nullptr;
      v.u.bool_list.size = items ? items->size() : 0;
      break;
    }
    case fb::KernelTypes::IntList:
    case fb::KernelTypes::TensorList:
    case fb::KernelTypes::OptionalTensorList: break;  // pass 2
    default:
      return error(PTERON_ERROR_INVALID_PROGRAM, "value %zu has unknown type %d", i,
                   static_cast<int>(ev->val_type()));
  }
  return Status::Ok();
}

// An int list holds the indices of Int values; their current values are
// copied in here and refreshed before every kernel call (executor.cpp).
Status build_int_list(pteron_method* m, size_t i, const fb::IntList* list) {
  const auto* items = list->items();
  size_t k = items ? items->size() : 0;
  m->ints[i].assign(k, 0);
  m->int_items[i].assign(k, 0);
  for (size_t j = 0; j < k; ++j) {
    int64_t idx = items->Get(static_cast<uint32_t>(j));
    Status s = check_value_index(m, idx, format("int list value %zu", i).c_str());
    if (!s.ok()) return s;
    if (m->values[idx].tag != PTERON_VALUE_INT)
      return error(PTERON_ERROR_INVALID_PROGRAM,
                   "int list value %zu item %zu refers to value %lld, which is not an Int", i, j,
                   (long long)idx);
    m->ints[i][j] = m->values[idx].u.i;
    m->int_items[i][j] = static_cast<uint32_t>(idx);
  }
  pteron_value& v = m->values[i];
  v.tag = PTERON_VALUE_INT_LIST;
  v.u.int_list.data = m->ints[i].data();
  v.u.int_list.size = k;
  return Status::Ok();
}

// A tensor list, or an optional tensor list (item -1 or a None value: absent).
Status build_tensor_list(pteron_method* m, size_t i, const fb::EValue* ev) {
  bool optional = ev->val_type() == fb::KernelTypes::OptionalTensorList;
  const auto* items =
      optional ? ev->val_as_OptionalTensorList()->items() : ev->val_as_TensorList()->items();
  size_t k = items ? items->size() : 0;
  m->tlists[i].assign(k, nullptr);
  m->tlist_items[i].assign(k, -1);
  for (size_t j = 0; j < k; ++j) {
    int32_t idx = items->Get(static_cast<uint32_t>(j));
    if (optional && idx == -1) continue;
    Status s = check_value_index(m, idx, format("tensor list value %zu", i).c_str());
    if (!s.ok()) return s;
    m->tlist_items[i][j] = idx;
    const pteron_value& item = m->values[idx];
    if (item.tag == PTERON_VALUE_TENSOR) {
      m->tlists[i][j] = item.u.tensor;
    } else if (!(optional && item.tag == PTERON_VALUE_NONE)) {
      return error(PTERON_ERROR_INVALID_PROGRAM,
                   "tensor list value %zu item %zu refers to value %d, which is not a Tensor", i, j,
                   idx);
    }
  }
  pteron_value& v = m->values[i];
  v.tag = optional ? PTERON_VALUE_OPTIONAL_TENSOR_LIST : PTERON_VALUE_TENSOR_LIST;
  v.u.tensor_list.data = m->tlists[i].data();
  v.u.tensor_list.size = k;
  return Status::Ok();
}

Status build_values(pteron_method* m, const pteron_method_options* opts) {
  const auto* vals = m->plan->values();
  size_t n = vals ? vals->size() : 0;
  m->values.assign(n, pteron_value{});
  m->tensors.assign(n, pteron_tensor{});
  m->ints.assign(n, {});
  m->int_items.assign(n, {});
  m->tlists.assign(n, {});
  m->tlist_items.assign(n, {});

  std::vector<size_t> buffer_sizes;
  Status s = place_planned_buffers(m, opts, &buffer_sizes);
  if (!s.ok()) return s;
  // Pass 1: scalars and tensors.
  for (size_t i = 0; i < n; ++i) {
    s = build_direct_value(m, i, vals->Get(static_cast<uint32_t>(i)), buffer_sizes);
    if (!s.ok()) return s;
  }
  // Pass 2: lists, which refer to other values.
  for (size_t i = 0; i < n; ++i) {
    const fb::EValue* ev = vals->Get(static_cast<uint32_t>(i));
    if (!ev) continue;
    switch (ev->val_type()) {
      case fb::KernelTypes::IntList: s = build_int_list(m, i, ev->val_as_IntList()); break;
      case fb::KernelTypes::TensorList:
      case fb::KernelTypes::OptionalTensorList: s = build_tensor_list(m, i, ev); break;
      default: break;
    }
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

// ---- inputs and outputs -----------------------------------------------------

Status take_io(const pteron_method* m, const flatbuffers::Vector<int32_t>* v,
               std::vector<int32_t>* out, const char* what) {
  size_t k = v ? v->size() : 0;
  for (size_t j = 0; j < k; ++j) {
    int32_t idx = v->Get(static_cast<uint32_t>(j));
    Status st = check_value_index(m, idx, format("%s %zu", what, j).c_str());
    if (!st.ok()) return st;
    out->push_back(idx);
  }
  return Status::Ok();
}

Status build_inputs_and_outputs(pteron_method* m) {
  Status s = take_io(m, m->plan->inputs(), &m->inputs, "input");
  if (!s.ok()) return s;
  s = take_io(m, m->plan->outputs(), &m->outputs, "output");
  if (!s.ok()) return s;
  m->input_set.assign(m->inputs.size(), false);
  m->staged.assign(m->inputs.size(), {});
  // Scalar inputs hold the value the method was exported for: already set.
  for (size_t j = 0; j < m->inputs.size(); ++j)
    if (m->values[m->inputs[j]].tag != PTERON_VALUE_TENSOR) m->input_set[j] = true;
  return Status::Ok();
}

Status method_not_found(pteron_program* p, const char* name) {
  std::string names;
  for (size_t i = 0; i < pteron_program_method_count(p); ++i) {
    const char* nm = "";
    pteron_status_release(pteron_program_method_name(p, i, &nm));
    names += (i ? ", " : "") + printable(nm);
  }
  return error(PTERON_ERROR_NOT_FOUND, "program has no method '%s' (it has: %s)",
               name ? printable(name).c_str() : "(null)", names.c_str());
}

}  // namespace

Status load_method(pteron_program* p, const char* name, const pteron_method_options* opts,
                   pteron_method* m) {
  m->plan = p->plan(name);
  if (!m->plan) return method_not_found(p, name);
  m->name = name;
  if (opts && opts->struct_size < sizeof(uint32_t) * 2)
    return error(PTERON_ERROR_INVALID_ARGUMENT, "method options struct_size %u is too small",
                 opts->struct_size);
  if (opts && opts->struct_size >= offsetof(pteron_method_options, max_allocated_bytes) +
                                      sizeof(opts->max_allocated_bytes))
    m->max_allocated_bytes = opts->max_allocated_bytes;
  Status s = build_values(m, opts);
  if (!s.ok()) return s;
  s = build_inputs_and_outputs(m);
  if (!s.ok()) return s;
  return build_chains(m);
}

}  // namespace pteron
