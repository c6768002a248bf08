// SPDX-License-Identifier: BSD-3-Clause
/* pteron/types.h - the values that both of pteron's C interfaces use: the
 * application API (pteron/pteron.h) and the ABI for kernel libraries and
 * delegates (pteron/kernel.h). Both include this header; nothing here is
 * needed on its own.
 *
 * Sources of the format facts: the dtype numbers, shape dynamism and value
 * tags are those of the ExecuTorch program format, as pteron's schema
 * runtime/core/schema/program.fbs spells it (ScalarType, TensorShapeDynamism,
 * KernelTypes; upstream keeps ScalarType in its scalar_type.fbs). A value read
 * from a .pte therefore needs no mapping.
 */
#ifndef PTERON_TYPES_H
#define PTERON_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "pteron/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes (int32). 0 is success everywhere: a pteron_status of the
 * application API and the return value of every kernel-ABI function hold
 * one of these. pteron_error_name() (pteron.h) gives the short name. */
typedef enum pteron_error {
  PTERON_OK = 0,
  PTERON_ERROR_INVALID_ARGUMENT = 1,  /* a caller passed a bad value */
  PTERON_ERROR_INVALID_PROGRAM = 2,   /* malformed or inconsistent .pte */
  PTERON_ERROR_NOT_FOUND = 3,         /* no such method / input / file */
  PTERON_ERROR_MISSING_OPERATOR = 4,  /* method needs an unregistered operator */
  PTERON_ERROR_MISSING_DELEGATE = 5,  /* method needs an unregistered backend */
  PTERON_ERROR_UNSUPPORTED_DTYPE = 6, /* an operator met a dtype it cannot handle */
  PTERON_ERROR_SHAPE_MISMATCH = 7,    /* wrong shape, or beyond a dynamic bound */
  PTERON_ERROR_OUT_OF_MEMORY = 8,
  PTERON_ERROR_IO = 9, /* file could not be opened / mapped */
  PTERON_ERROR_INTERNAL = 10,
  PTERON_ERROR_ABI_MISMATCH = 11,   /* component built for another ABI version */
  PTERON_ERROR_NOT_SUPPORTED = 12,  /* valid feature this build does not have */
  PTERON_ERROR_KERNEL_FAILED = 13,  /* a kernel reported a failure */
  PTERON_ERROR_DELEGATE_FAILED = 14 /* a delegate reported a failure */
} pteron_error;

/* Element types pteron's kernels and API handle. The numbers are the program
 * format's ScalarType values (runtime/core/schema/program.fbs), so a dtype
 * read from a .pte is used as is. The format also defines sub-byte, bit and
 * float8 types (16, 17, 22..26); a program may declare tensors of them, but
 * no name here covers them and pteron_dtype_name() calls them "unknown".
 * The two complex dtypes (9, 10; upstream's scalar_type.fbs lists them as
 * COMPLEXFLOAT and COMPLEXDOUBLE, commented out as not implemented, while its
 * exporter still writes them) are storage types: inputs, outputs and copies
 * carry them, and only the kernels that say so take them
 * (aten::view_as_real_copy.out); every other kernel refuses them with
 * PTERON_ERROR_UNSUPPORTED_DTYPE naming the dtype. */
typedef enum pteron_dtype {
  PTERON_DTYPE_UINT8 = 0,   /* ScalarType BYTE */
  PTERON_DTYPE_INT8 = 1,    /* CHAR */
  PTERON_DTYPE_INT16 = 2,   /* SHORT */
  PTERON_DTYPE_INT32 = 3,   /* INT */
  PTERON_DTYPE_INT64 = 4,   /* LONG */
  PTERON_DTYPE_FLOAT16 = 5, /* HALF */
  PTERON_DTYPE_FLOAT32 = 6, /* FLOAT */
  PTERON_DTYPE_FLOAT64 = 7, /* DOUBLE */
  /* COMPLEXFLOAT: 8 bytes, a float32 real part then a float32 imaginary
   * part (PyTorch's and numpy's complex64 layout, numpy "<c8") */
  PTERON_DTYPE_COMPLEX64 = 9,
  /* COMPLEXDOUBLE: 16 bytes, float64 real then imaginary ("<c16") */
  PTERON_DTYPE_COMPLEX128 = 10,
  PTERON_DTYPE_BOOL = 11, /* one byte per element, 0 or 1 */
  PTERON_DTYPE_QINT8 = 12,
  PTERON_DTYPE_QUINT8 = 13,
  PTERON_DTYPE_QINT32 = 14,
  PTERON_DTYPE_BFLOAT16 = 15,
  PTERON_DTYPE_UINT16 = 27,
  PTERON_DTYPE_UINT32 = 28,
  PTERON_DTYPE_UINT64 = 29
} pteron_dtype;

/* Name of a dtype as PyTorch spells it without the "torch." prefix
 * ("float32", "int64", "bool", ...); "unknown" for a value outside
 * pteron_dtype. Never NULL; the string is static. */
PTERON_API const char* pteron_dtype_name(int32_t dtype);

/* Shape dynamism of a tensor, as the program declares it (the format's
 * TensorShapeDynamism). */
typedef enum pteron_shape_dynamism {
  PTERON_SHAPE_STATIC = 0,        /* sizes never change */
  PTERON_SHAPE_DYNAMIC_BOUND = 1, /* sizes may shrink; each dim <= its bound */
  PTERON_SHAPE_DYNAMIC_UNBOUND = 2
} pteron_shape_dynamism;

/* Most dimensions a tensor may have; a program with a higher rank is refused
 * at method load (PTERON_ERROR_INVALID_PROGRAM). */
#define PTERON_MAX_DIM 16

/* Kind of a value (an EValue): the order of the format's KernelTypes union. */
typedef enum pteron_value_tag {
  PTERON_VALUE_NONE = 0,
  PTERON_VALUE_INT = 1,
  PTERON_VALUE_BOOL = 2,
  PTERON_VALUE_DOUBLE = 3,
  PTERON_VALUE_TENSOR = 4,
  PTERON_VALUE_STRING = 5,
  PTERON_VALUE_INT_LIST = 6,
  PTERON_VALUE_DOUBLE_LIST = 7,
  PTERON_VALUE_BOOL_LIST = 8,
  PTERON_VALUE_TENSOR_LIST = 9,
  PTERON_VALUE_OPTIONAL_TENSOR_LIST = 10
} pteron_value_tag;

/* Name of a value tag as the format's KernelTypes union spells it ("None",
 * "Int", "Tensor", "BoolList", ...); "unknown" for a value outside
 * pteron_value_tag. Never NULL; the string is static. */
PTERON_API const char* pteron_value_tag_name(int32_t tag);

/* Number of threads the runtime's pteron_parallel_for (pteron/kernel.h) may
 * use: 1 while it is serial, the pool's size once a thread pool has
 * installed itself (loading the threadpool component does that). */
PTERON_API int32_t pteron_parallel_threads(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PTERON_TYPES_H */
