// SPDX-License-Identifier: BSD-3-Clause
// test_package.cpp - consumer of the pteron Conan package: runs the MLP
// fixture (test_package/mlp.pte, exported by upstream ExecuTorch 1.5.1) and
// compares its output with eager PyTorch's (rtol 1e-4, atol 1e-5). The input
// and expected output below were written by models/export.py's eager run.
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "pteron/pteron.hpp"

static const float kInput[64] = {
    -0.60276252f,  -0.120834209f, -0.432263553f,  1.88105297f,    -0.715824962f, 0.00256763655f,
    0.205598414f,  0.56261903f,   0.279453158f,   -1.08725297f,   0.0612512566f, 0.908760309f,
    -0.413390011f, -0.193711475f, -2.18255591f,   0.718506098f,   -1.45675886f,  -0.988405645f,
    1.05520165f,   0.778276443f,  1.06740081f,    0.11430195f,    -0.557992518f, 0.306580216f,
    -0.62449342f,  -0.170657918f, 0.919159293f,   0.559586704f,   1.7717979f,    -0.962056875f,
    0.0614678636f, -0.905975997f, -0.923416197f,  0.386924535f,   -1.06495106f,  -0.242713392f,
    -1.18746841f,  0.85629493f,   -0.438816786f,  -0.519136846f,  0.376252383f,  -0.802329004f,
    -0.534825683f, -0.888087213f, 0.732403457f,   -0.975836098f,  1.52743137f,   -0.55008167f,
    1.5083611f,    1.03191924f,   -0.0614057854f, -0.0824792907f, 0.0898988992f, -0.912561953f,
    0.285965472f,  0.164344057f,  1.30769992f,    -0.292020589f,  -1.25412548f,  0.795407891f,
    -0.823323309f, -0.282675475f, -0.539607882f,  0.348624527f};
static const float kExpected[32] = {
    -0.313357919f,  0.511089146f,   0.257032663f,  0.247549474f,   -0.509345829f,  0.224424183f,
    -0.139661789f,  -0.203003213f,  -0.319438696f, 0.509000599f,   0.428566605f,   -0.182627097f,
    -0.779198766f,  0.00111278892f, 0.10008207f,   0.218762279f,   -0.0859560668f, 0.474622369f,
    0.262925267f,   0.186055556f,   -0.214758724f, 0.0634512603f,  0.408166975f,   0.0724885315f,
    -0.0574208908f, 0.315057755f,   0.121968739f,  -0.0488722622f, -0.0753717795f, 0.211937681f,
    -0.181135908f,  0.158453986f};

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: test_package mlp.pte\n");
    return 2;
  }
  try {
    std::set<std::string> libraries;
    std::vector<pteron::KernelInfo> kernels = pteron::registered_kernels();
    for (const pteron::KernelInfo& k : kernels) libraries.insert(k.library);
    std::string names;
    for (const std::string& l : libraries) names += " " + l;
    std::printf("pteron %s: %zu registered operators from%s\n", pteron_version(), kernels.size(),
                names.empty() ? " no library" : names.c_str());
    // Delegates the package registers (the Windows package too: XnnpackBackend
    // from pteron_backend_xnnpack.dll, on pteron's own kernels there).
    std::string backends;
    for (const pteron::BackendInfo& b : pteron::registered_backends())
      backends += " " + b.id + " (" + b.library + ")";
    std::printf("backends:%s\n", backends.empty() ? " none" : backends.c_str());
    pteron::Program program = pteron::Program::load_file(argv[1]);
    pteron::Method m = program.load_method("forward");
    m.set_input<float>(0, {4, 16}, std::vector<float>(kInput, kInput + 64));
    m.execute();
    std::vector<float> out = m.output<float>(0);
    double max_err = 0;
    bool ok = out.size() == 32;
    for (size_t i = 0; ok && i < out.size(); ++i) {
      double d = std::fabs(double(out[i]) - double(kExpected[i]));
      if (d > max_err) max_err = d;
      if (d > 1e-5 + 1e-4 * std::fabs(double(kExpected[i]))) ok = false;
    }
    std::printf("mlp output [4, 8]: %zu values; max abs err vs eager PyTorch %.3g: %s\n",
                out.size(), max_err, ok ? "MATCH" : "MISMATCH");
    return ok ? 0 : 1;
  } catch (const pteron::Error& e) {
    std::fprintf(stderr, "test_package: pteron error [%s]: %s\n", e.code_name(), e.what());
    return 1;
  }
}
