// load_weights as a plan that can be inspected before anything is read, then executed.
#include "weightloader/load_plan.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

std::unique_ptr<WeightSource> in_memory(std::vector<float>& a, std::vector<float>& b) {
  return WeightSource::from_memory("<plan>", {{"model.a", DType::F32, {2, 3}, {}, a.data(), nullptr},
                                              {"model.b", DType::F32, {3}, {}, b.data(), nullptr},
                                              {"extra", DType::F32, {1}, {}, b.data(), nullptr}});
}

TEST(LoadPlan, ListsEveryDecisionWithoutReading) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9};
  auto source = in_memory(a, b);
  Model model;
  model.add_parameter("a", {2, 3}, DType::BF16);
  model.add_parameter("b", {1, 3}, DType::F32);
  model.add_parameter("c", {4}, DType::F32);
  LoadOptions options;
  options.names.strip_prefix("model.");
  options.names.drop("extra");
  const LoadPlan plan = plan_load(model, *source, options);
  ASSERT_EQ(plan.reads.size(), 1u);  // b's shape differs: planned as an error, not a read
  EXPECT_EQ(plan.reads[0].param->name, "a");
  EXPECT_EQ(plan.reads[0].bytes_written, 6u * 2);
  EXPECT_EQ(plan.loaded, std::vector<std::string>{"a"});
  ASSERT_EQ(plan.converted.size(), 1u);
  EXPECT_EQ(plan.converted[0].from, "F32");
  EXPECT_EQ(plan.skipped, std::vector<std::string>{"extra"});
  EXPECT_EQ(plan.missing, std::vector<std::string>{"c"});  // b has a tensor, of the wrong shape
  ASSERT_EQ(plan.shape_errors.size(), 1u);
  EXPECT_NE(plan.shape_errors[0].find("allow_reshape"), std::string::npos);
  // Nothing was written yet: the parameter still holds what it was allocated with.
  EXPECT_NE(model.find("a")->data.data<uint16_t>(), nullptr);
  test::expect_error(ErrorCode::ShapeMismatch, [&] { execute_load(plan, *source, options); });
}

TEST(LoadPlan, ExecutesWhatWasPlanned) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9};
  auto source = in_memory(a, b);
  Model model;
  model.add_parameter("a", {2, 3}, DType::F32);
  model.add_parameter("b", {3}, DType::F32);
  LoadOptions options;
  options.names.strip_prefix("model.");
  options.strict = false;
  const LoadPlan plan = plan_load(model, *source, options);
  EXPECT_EQ(plan.unexpected, std::vector<std::string>{"extra"});
  EXPECT_NO_THROW(plan.check(false));
  test::expect_error(ErrorCode::UnexpectedTensors, [&] { plan.check(true); });
  const LoadReport report = execute_load(plan, *source, options);
  EXPECT_EQ(report.loaded, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(report.bytes_read, 9u * 4);
  EXPECT_EQ(model.find("a")->data.data<float>()[5], 6.0f);
  EXPECT_EQ(model.find("b")->data.data<float>()[0], 7.0f);
}

TEST(LoadPlan, TwoTensorsOntoOneParameterIsRefusedWhilePlanning) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9};
  auto source = WeightSource::from_memory("<plan>", {{"x.w", DType::F32, {3}, {}, b.data(), nullptr},
                                                     {"y.w", DType::F32, {3}, {}, a.data(), nullptr}});
  Model model;
  model.add_parameter("w", {3}, DType::F32);
  LoadOptions options;
  options.names.regex_rename(R"(^[xy]\.)", "");
  test::expect_error(ErrorCode::DuplicateTarget, [&] { plan_load(model, *source, options); });
}

}  // namespace
}  // namespace wl
