// SPDX-License-Identifier: BSD-3-Clause
// replay_main.cpp - main() for a fuzz target built without libFuzzer (GCC's
// ASan+UBSan build, tests/test_fuzz_corpus.py): runs LLVMFuzzerTestOneInput
// once on each file named, and on each file under each folder named, in
// sorted order, after LLVMFuzzerInitialize when the target has one.
// Prints one line per input ("replay <path> <bytes> B <ms> ms") and a count.
// Exit status: 0 when every input ran (a sanitizer report or a broken
// contract ends the process before), 2 for a path that cannot be read.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::filesystem::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path p(argv[i]);
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p, ec))
        if (e.is_regular_file()) inputs.push_back(e.path());
    } else if (std::filesystem::is_regular_file(p, ec)) {
      inputs.push_back(p);
    } else {
      std::fprintf(stderr, "replay: '%s' is neither a file nor a folder\n", argv[i]);
      return 2;
    }
  }
  std::sort(inputs.begin(), inputs.end());
  for (const auto& p : inputs) {
    std::ifstream f(p, std::ios::binary);
    std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(f)),
                                     std::istreambuf_iterator<char>());
    if (f.bad()) {
      std::fprintf(stderr, "replay: cannot read '%s'\n", p.string().c_str());
      return 2;
    }
    // A copy of exactly the input's size, as libFuzzer hands it over, so
    // ASan sees a read past its end.
    std::vector<uint8_t> data(bytes.begin(), bytes.end());
    const auto t0 = std::chrono::steady_clock::now();
    LLVMFuzzerTestOneInput(data.empty() ? nullptr : data.data(), data.size());
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("replay %s %zu B %.1f ms\n", p.string().c_str(), data.size(), ms);
    std::fflush(stdout);
  }
  std::printf("replayed %zu inputs\n", inputs.size());
  return 0;
}
