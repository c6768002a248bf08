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
// NumPy descr ("<f4") of a pteron dtype, or "" if it has none.
const char* npy_descr(int32_t dtype);

}  // namespace pteron_tools
