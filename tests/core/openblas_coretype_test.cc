// OpenBLAS runs the kernels the coretypes suite asked for
// (tests/coretypes/run_on_coretype.cc sets OPENBLAS_CORETYPE): an unknown or
// refused name would silently fall back to another core type, and the run
// would test that one twice.
#include <cblas.h>
#include <strings.h>

#include <cstdlib>

#include "gtest/gtest.h"

namespace {

TEST(OpenBlas, RunsTheRequestedCoreType) {
  const char* name = openblas_get_corename();
  ASSERT_NE(name, nullptr);
  const char* requested = std::getenv("OPENBLAS_CORETYPE");
  if (requested == nullptr) {
    GTEST_SKIP() << "OPENBLAS_CORETYPE is not set; OpenBLAS chose " << name;
  }
  EXPECT_EQ(strcasecmp(name, requested), 0)
      << "OPENBLAS_CORETYPE=" << requested << " but OpenBLAS runs " << name;
}

}  // namespace
