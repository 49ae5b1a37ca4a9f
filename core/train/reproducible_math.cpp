#include "train/reproducible_math.hpp"

#include <dlfcn.h>

#include <cstdlib>

#include <ATen/Parallel.h>

namespace plait {

void request_reproducible_blas() { ::setenv("MKL_CBWR", "AUTO", /*overwrite=*/0); }

void fix_cpu_math(int threads) {
  request_reproducible_blas();
  at::set_num_threads(threads);
}

int mkl_reproducibility_branch() {
  // MKL's own mkl_cbwr_get is not exported by LibTorch; its service twin is.
  using Query = int (*)(int);
  const auto query = reinterpret_cast<Query>(::dlsym(RTLD_DEFAULT, "mkl_serv_cbwr_get"));
  constexpr int kBranchSetting = 1;  // MKL_CBWR_BRANCH
  return query ? query(kBranchSetting) : -1;
}

std::string cpu_math_summary() {
  const int branch = mkl_reproducibility_branch();
  std::string mkl;
  if (branch < 0) {
    mkl = "MKL's reproducibility unknown";
  } else if (branch <= 1) {  // MKL_CBWR_OFF, MKL_CBWR_BRANCH_OFF
    mkl = "MKL not reproducible (MKL_CBWR is off: twin runs may differ in their last digits)";
  } else {
    const bool strict = (branch & 0x10000) != 0;  // MKL_CBWR_STRICT
    const int code_path = branch & 0xffff;
    mkl = code_path == 2 ? std::string("MKL reproducible (AUTO") : "MKL reproducible (code path " + std::to_string(code_path);
    mkl += strict ? ", strict)" : ")";
  }
  const int threads = at::get_num_threads();
  return std::to_string(threads) + (threads == 1 ? " thread, " : " threads, ") + mkl;
}

}  // namespace plait
