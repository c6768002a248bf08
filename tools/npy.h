// SPDX-License-Identifier: BSD-3-Clause
// npy.h - minimal reader/writer for NumPy's .npy format (format versions 1-3,
// little-endian or byte-order-free dtypes, C order). The format is described
// in NumPy's documentation, "numpy.lib.format".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pteron_tools {

struct NpyArray {
  int32_t dtype = -1;  // pteron_dtype
  std::vector<int64_t> shape;
  std::vector<unsigned char> data;  // C-order element bytes
};

// Reads `path` (UTF-8), a regular file only (a FIFO or device is refused, never
// waited on). The header must be one dict literal ended by a newline and the
// data exactly the bytes its shape needs. Returns "" on success, else an error
// message naming the file (and the OS's reason when it cannot be opened).
std::string npy_read(const std::string& path, NpyArray* out);
// The same checks on `size` bytes in memory (`data` may be NULL when `size` is
// 0); messages begin with `name` (npy_read passes the quoted path).
std::string npy_parse(const unsigned char* data, size_t size, const std::string& name,
                      NpyArray* out);
// Writes `a` to `path` (format version 1.0). Returns "" or an error message.
std::string npy_write(const std::string& path, const NpyArray& a);
// NumPy descr ("<f4") of a pteron dtype, or "" if it has none. bfloat16 has no NumPy dtype:
// ml_dtypes' bfloat16 arrays are saved by np.save with descr '<V2' (a 2-byte void), which
// npy_parse reads as bfloat16 (and npy_descr gives for it).
const char* npy_descr(int32_t dtype);

// bfloat16 (the upper 16 bits of an IEEE float32) and float16 (IEEE binary16) to float32,
// exactly; float32 to bfloat16 rounded to nearest even, NaN kept a (quiet) NaN.
float bfloat16_to_float(uint16_t h);
uint16_t float_to_bfloat16(float f);
float float16_to_float(uint16_t h);

}  // namespace pteron_tools
