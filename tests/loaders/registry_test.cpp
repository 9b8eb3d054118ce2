#include "weightloader/registry.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace wl {
namespace {

class NullLoader : public WeightLoader {
 public:
  explicit NullLoader(std::string tag) : tag(std::move(tag)) {}
  std::unique_ptr<WeightSource> get_weights(const std::string& path, const LoadOptions&) const override {
    return std::make_unique<WeightSource>("null", path, Catalogue{});
  }
  std::string tag;
};

LoaderSpec null_spec() {
  return LoaderSpec{"does nothing",
                    {{"tag", KwType::String, "a label"}, {"level", KwType::Int, "a number"}},
                    [](const Kwargs& kw) { return std::make_unique<NullLoader>(kwarg_string(kw, "tag", "none")); }};
}

TEST(Registry, RegisterListAndCreate) {
  WeightLoaderRegistry r;
  r.register_loader("zeta", null_spec());
  r.register_loader("alpha", null_spec());
  EXPECT_EQ(r.list_available(), (std::vector<std::string>{"alpha", "zeta"}));
  auto loader = r.create("alpha", {{"tag", std::string("x")}});
  EXPECT_EQ(dynamic_cast<NullLoader&>(*loader).tag, "x");
}

TEST(Registry, TakenNameIsAnError) {
  WeightLoaderRegistry r;
  r.register_loader("mine", null_spec());
  const std::string msg = test::expect_error(ErrorCode::LoaderExists, [&] { r.register_loader("mine", null_spec()); });
  EXPECT_NE(msg.find("mine"), std::string::npos);
}

TEST(Registry, UnknownLoaderListsTheAvailableOnes) {
  WeightLoaderRegistry r;
  r.register_loader("one", null_spec());
  r.register_loader("two", null_spec());
  const std::string msg = test::expect_error(ErrorCode::UnknownLoader, [&] { r.create("three"); });
  EXPECT_NE(msg.find("one, two"), std::string::npos) << msg;
}

TEST(Registry, UnknownKwargListsTheAcceptedOnes) {
  WeightLoaderRegistry r;
  r.register_loader("one", null_spec());
  const std::string msg = test::expect_error(ErrorCode::UnknownKwarg, [&] { r.create("one", {{"colour", std::string("red")}}); });
  EXPECT_NE(msg.find("colour"), std::string::npos);
  EXPECT_NE(msg.find("tag"), std::string::npos);
  EXPECT_NE(msg.find("dtype"), std::string::npos);  // the common ones too
}

TEST(Registry, KwargsAreCoercedAndChecked) {
  WeightLoaderRegistry r;
  r.register_loader("one", null_spec());
  test::expect_error(ErrorCode::InvalidKwarg, [&] { r.create("one", {{"level", std::string("many")}}); });
  test::expect_error(ErrorCode::InvalidKwarg, [&] { r.create("one", {{"level", true}}); });
  test::expect_error(ErrorCode::InvalidKwarg, [&] { r.create("one", {{"strict", std::string("maybe")}}); });
  test::expect_error(ErrorCode::InvalidKwarg, [&] { r.create("one", {{"dtype", std::string("f12")}}); });
  test::expect_error(ErrorCode::InvalidKwarg, [&] { r.create("one", {{"rename", std::string("nonsense")}}); });
  EXPECT_NO_THROW(r.create("one", {{"level", std::string("3")}}));
  EXPECT_NO_THROW(r.create("one", {{"level", int64_t{3}}}));
}

TEST(Registry, CommonKwargsConfigureTheLoader) {
  WeightLoaderRegistry r;
  r.register_loader("one", null_spec());
  auto loader = r.create("one", {{"dtype", std::string("bfloat16")},
                                 {"strict", std::string("false")},
                                 {"allow_reshape", true},
                                 {"strip_prefix", std::string("model.")},
                                 {"rename", std::string("a=b;c=d")},
                                 {"regex_rename", std::string(R"(h\.(\d+)=>layers.$1)")},
                                 {"drop", std::string(".*inv_freq")},
                                 {"concurrency", std::string("3")}});
  EXPECT_EQ(loader->dtype(), DType::BF16);
  EXPECT_FALSE(loader->options().strict);
  EXPECT_TRUE(loader->options().allow_reshape);
  EXPECT_EQ(loader->options().io.concurrency, 3u);
  const NameMapping& m = loader->options().names;
  EXPECT_EQ(m.map("model.a"), "b");
  EXPECT_EQ(m.map("c"), "d");
  EXPECT_EQ(m.map("h.7.w"), "layers.7.w");
  EXPECT_EQ(m.map("rotary.inv_freq"), std::nullopt);
}

TEST(Registry, WithBuiltinsListsTheBuiltinsSorted) {
  const auto names = WeightLoaderRegistry::with_builtins()->list_available();
  EXPECT_NE(std::find(names.begin(), names.end(), "local"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "custom_binary"), names.end());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
}

TEST(Registry, LoaderMayNotRedeclareACommonKwarg) {
  WeightLoaderRegistry r;
  LoaderSpec spec = null_spec();
  spec.kwargs.push_back({"dtype", KwType::String, "again"});
  test::expect_error(ErrorCode::InvalidArgument, [&] { r.register_loader("x", spec); });
}

}  // namespace
}  // namespace wl
