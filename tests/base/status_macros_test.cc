// LAWN_RETURN_IF_ERROR and LAWN_ASSIGN_OR_RETURN: an error leaves the function at once with that status; OK
// goes on with the value.
#include "base/status_macros.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace lawn {
namespace {

absl::Status FailIf(bool fail) { return fail ? absl::NotFoundError("missing") : absl::OkStatus(); }

absl::StatusOr<std::unique_ptr<int>> MakeInt(bool fail, int value) {
  if (fail) return absl::InvalidArgumentError("bad int");
  return std::make_unique<int>(value);
}

absl::Status TwoSteps(bool fail_first, bool* reached_second) {
  LAWN_RETURN_IF_ERROR(FailIf(fail_first));
  *reached_second = true;
  return absl::OkStatus();
}

absl::StatusOr<int> SumOf(bool fail_a, bool fail_b) {
  // Two on one function (different lines): each gets its own temporary. The move-only value is moved out.
  LAWN_ASSIGN_OR_RETURN(std::unique_ptr<int> a, MakeInt(fail_a, 2));
  LAWN_ASSIGN_OR_RETURN(const std::unique_ptr<int> b, MakeInt(fail_b, 3));
  return *a + *b;
}

TEST(StatusMacrosTest, ReturnIfErrorReturnsTheErrorAndSkipsTheRest) {
  bool reached = false;
  const absl::Status s = TwoSteps(/*fail_first=*/true, &reached);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "missing");
  EXPECT_FALSE(reached);
}

TEST(StatusMacrosTest, ReturnIfErrorGoesOnWhenOk) {
  bool reached = false;
  EXPECT_TRUE(TwoSteps(/*fail_first=*/false, &reached).ok());
  EXPECT_TRUE(reached);
}

TEST(StatusMacrosTest, AssignOrReturnAssignsTheValueWhenOk) {
  const absl::StatusOr<int> sum = SumOf(false, false);
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(*sum, 5);
}

TEST(StatusMacrosTest, AssignOrReturnReturnsTheFirstError) {
  EXPECT_EQ(SumOf(false, true).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SumOf(true, false).status().message(), "bad int");
}

TEST(StatusMacrosTest, AssignOrReturnAssignsToAnExistingVariable) {
  auto assign = [](int* out) -> absl::Status {
    std::unique_ptr<int> v;
    LAWN_ASSIGN_OR_RETURN(v, MakeInt(false, 7));
    *out = *v;
    return absl::OkStatus();
  };
  int out = 0;
  ASSERT_TRUE(assign(&out).ok());
  EXPECT_EQ(out, 7);
}

}  // namespace
}  // namespace lawn
