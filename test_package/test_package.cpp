// SPDX-License-Identifier: BSD-3-Clause
// test_package.cpp - consumer of the pteron Conan package: runs the MLP
// fixture (test_package/mlp.pte, exported by upstream ExecuTorch 1.5.1) and
// compares its output with eager PyTorch's (rtol 1e-4, atol 1e-5). The input
// and expected output below were written by models/export.py's eager run.
// A package with backend_cuda also runs test_package/mlp_cuda.pte (a copy of
// tests/cuda/mlp_cuda.pte): on a GPU it must match eager, without a driver
// method load must fail naming the cause (missing_delegate), which is printed.
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

// The CUDA-lowered MLP (mlp_cuda.pte, tests/cuda/export.py: Linear(16, 32), ReLU,
// Linear(32, 8) on PteronCudaBackend, softmax on the CPU): its input and eager output.
static const float kCudaInput[64] = {
    -0.435678422f, 1.10282421f, -0.768972158f, -0.129018992f, 1.41992462f, -0.329576254f,
    0.179685056f, -0.988553822f, 1.26048493f, -0.649213195f, 0.161289379f, -0.880979419f,
    -0.0432543792f, 0.471038699f, -1.30944431f, 1.24212599f, -1.00334167f, -0.405472368f,
    1.02260244f, -0.254720628f, -1.27533185f, -0.372035742f, -0.897377074f, -0.687037945f,
    -0.326982141f, 0.953301191f, 0.572880208f, -0.824913085f, -0.542198658f, 1.15095663f,
    1.60954988f, -0.738664389f, -1.0158776f, -1.52956021f, -1.21795595f, 0.868293643f,
    -0.384978056f, 0.0963795111f, -0.318227828f, 1.85106242f, -0.14789845f, -1.07997477f,
    -0.139638931f, -1.2574358f, 1.54350638f, 0.968579292f, -1.55519629f, 0.798858404f,
    1.18961871f, -0.179521754f, -1.8232398f, -0.0513509959f, -1.63609207f, -2.51056862f,
    -1.23827255f, -0.929619253f, -0.0585360005f, 0.772879481f, 0.468943536f, 0.259886414f,
    0.757624388f, -2.04181266f, -0.552377939f, 0.626977026f};
static const float kCudaExpected[32] = {
    0.123590283f, 0.0880892649f, 0.101310581f, 0.115340397f, 0.184276327f, 0.178779513f,
    0.123584472f, 0.0850290656f, 0.124157816f, 0.137453929f, 0.165651157f, 0.0944493264f,
    0.115950309f, 0.10711544f, 0.1583426f, 0.0968793109f, 0.118005298f, 0.0810570717f,
    0.127109721f, 0.0942760855f, 0.178361952f, 0.169191539f, 0.134413093f, 0.0975852087f,
    0.143192068f, 0.135765985f, 0.176254839f, 0.0759133175f, 0.0671017841f, 0.132678762f,
    0.14902553f, 0.120067775f};

// Where the package has backend_cuda: runs mlp_cuda.pte. With a driver and a GPU it must
// match eager; without one, method load must fail with missing_delegate and a message that
// names the cause (printed). Returns false on any other outcome.
static bool run_cuda_mlp(const std::string& path) {
  try {
    pteron::Program program = pteron::Program::load_file(path);
    pteron::Method m = program.load_method("forward");
    m.set_input<float>(0, {4, 16}, std::vector<float>(kCudaInput, kCudaInput + 64));
    m.execute();
    std::vector<float> out = m.output<float>(0);
    bool ok = out.size() == 32;
    for (size_t i = 0; ok && i < out.size(); ++i)
      ok = std::fabs(double(out[i]) - double(kCudaExpected[i])) <= 1e-5 + 1e-4 * std::fabs(double(kCudaExpected[i]));
    std::printf("mlp_cuda output [4, 8] on PteronCudaBackend: %s\n", ok ? "MATCH" : "MISMATCH");
    return ok;
  } catch (const pteron::Error& e) {
    if (e.code() != PTERON_ERROR_MISSING_DELEGATE) {
      std::fprintf(stderr, "test_package: mlp_cuda: pteron error [%s]: %s\n", e.code_name(), e.what());
      return false;
    }
    std::printf("mlp_cuda on PteronCudaBackend, this machine: [%s] %s\n", e.code_name(), e.what());
    return true;
  }
}

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
    bool cuda = false;
    for (const pteron::BackendInfo& b : pteron::registered_backends()) {
      backends += " " + b.id + " (" + b.library + ")";
      cuda = cuda || b.id == "PteronCudaBackend";
    }
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
    if (cuda) {
      std::string dir = argv[1];
      const size_t slash = dir.find_last_of("/\\");
      dir = slash == std::string::npos ? std::string() : dir.substr(0, slash + 1);
      ok = run_cuda_mlp(dir + "mlp_cuda.pte") && ok;
    }
    return ok ? 0 : 1;
  } catch (const pteron::Error& e) {
    std::fprintf(stderr, "test_package: pteron error [%s]: %s\n", e.code_name(), e.what());
    return 1;
  }
}
