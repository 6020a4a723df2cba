#include "docker_test_support.h"

namespace docker_test {
namespace {

// Fails the run if any container of this process outlived its test, and removes it.
class LeakSweep : public ::testing::Environment {
 public:
  void TearDown() override {
    EngineClient engine;
    const auto left = containersOfThisProcess(engine);
    for (const auto& id : left) forceRemoveContainer(engine, id);
    EXPECT_TRUE(left.empty()) << left.size() << " container(s) leaked by the tests";
  }
};
// gtest registers environments this way; it does not throw in practice.
const auto* const kLeakSweep =
    ::testing::AddGlobalTestEnvironment(new LeakSweep);  // NOLINT(cert-err58-cpp)

}  // namespace
}  // namespace docker_test
