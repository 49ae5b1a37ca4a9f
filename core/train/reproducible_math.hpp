#pragma once
// The same bits run after run from this process's CPU math, which resuming "bit for bit"
// and every twin-run comparison rest on.
#include <string>

namespace plait {

// Asks MKL for conditional numerical reproducibility (MKL_CBWR=AUTO, unless the user set
// MKL_CBWR): Intel's condition for MKL giving the same bits run after run. It is not all
// it takes: at 2 intra-op threads about 1 one-process run in 350 still differs from its
// twin in its last digits, inside LibTorch (docs/running.md). MKL reads the setting at
// its first product, so this is called before any.
void request_reproducible_blas();

// Sets the intra-op thread count (always, even to LibTorch's default: only then does
// LibTorch turn MKL's dynamic thread count off, another of MKL's conditions) and makes
// sure of the request above.
void fix_cpu_math(int threads);

// MKL's reproducibility branch as it reports it (2: AUTO), or -1 where LibTorch's MKL does
// not say (a LibTorch without MKL, or one that hides the query).
int mkl_reproducibility_branch();

// "2 threads, MKL reproducible (AUTO)", as a run's log and `plait --version` say it.
std::string cpu_math_summary();

}  // namespace plait
