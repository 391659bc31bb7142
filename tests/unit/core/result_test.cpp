// Result/Status: values or errors that gain "while …" context as they climb.
#include "core/result.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace p2pnode;

TEST(Result, ValueOrError) {
  Result<int> ok = 5;
  EXPECT_TRUE(ok.ok());
  EXPECT_TRUE(static_cast<bool>(ok));
  EXPECT_EQ(*ok, 5);
  EXPECT_EQ(ok.value_or(7), 5);
  Result<int> bad = Error{"no such file", 2};
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "no such file");
  EXPECT_EQ(bad.error().code, 2);
  EXPECT_EQ(bad.value_or(7), 7);
  Result<std::string> s = std::string("abc");
  EXPECT_EQ(s->size(), 3u);
  EXPECT_EQ(std::move(s).value(), "abc");
}

TEST(Result, ContextClimbs) {
  Result<int> bad = Error{"this kernel has no CONFIG_VFIO_NOIOMMU", 0};
  const auto c = bad.context("while enabling noiommu mode").context("binding 0000:0b:00.0 to vfio-pci");
  EXPECT_EQ(c.error().message,
            "binding 0000:0b:00.0 to vfio-pci: while enabling noiommu mode: this kernel has no CONFIG_VFIO_NOIOMMU");
  Result<int> ok = 1;
  EXPECT_TRUE(ok.context("ignored").ok());
  EXPECT_EQ(Error({"x", 5}).with_context("y").code, 5);
}

TEST(Status, SuccessAndFailure) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_TRUE(Status::success().ok());
  Status f = Error{"short write", 0};
  EXPECT_FALSE(f.ok());
  EXPECT_EQ(f.context("writing ACS control").error().message, "writing ACS control: short write");
  EXPECT_TRUE(s.context("ignored").ok());
}
