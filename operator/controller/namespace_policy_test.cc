#include "operator/controller/namespace_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace booster::controller {
namespace {

using ::testing::HasSubstr;

kube::Json Namespace(const std::string& name, const std::string& label_value) {
  kube::Json ns = {{"metadata", {{"name", name}}}};
  if (!label_value.empty()) ns["metadata"]["labels"]["booster.dev/enabled"] = label_value;
  return ns;
}

TEST(NamespacePolicyTest, TheControlPlaneNeverOptsIn) {
  NamespacePolicy open;
  NamespacePolicy listed{.enabled = {"kube-system"}, .label = "booster.dev/enabled"};
  const kube::Json labelled = Namespace("kube-system", "true");
  for (const char* ns : {"kube-system", "kube-public", "kube-node-lease"}) {
    EXPECT_THAT(NamespaceRefusal(open, ns, nullptr), HasSubstr("control plane")) << ns;
    EXPECT_THAT(NamespaceRefusal(listed, ns, &labelled), HasSubstr("control plane")) << ns;
  }
}

TEST(NamespacePolicyTest, WithoutAPolicyEveryOtherNamespaceMay) {
  EXPECT_EQ(NamespaceRefusal(NamespacePolicy{}, "shop", nullptr), "");
}

TEST(NamespacePolicyTest, ANamespaceOptsInByNameOrByLabel) {
  NamespacePolicy p{.enabled = {"shop"}, .label = "booster.dev/enabled"};
  EXPECT_EQ(NamespaceRefusal(p, "shop", nullptr), "");
  const kube::Json yes = Namespace("web", "true");
  EXPECT_EQ(NamespaceRefusal(p, "web", &yes), "");
  for (const char* value : {"", "false", "yes"}) {
    const kube::Json no = Namespace("web", value);
    std::string why = NamespaceRefusal(p, "web", &no);
    EXPECT_THAT(why, HasSubstr("namespace web has not opted in")) << value;
    EXPECT_THAT(why, HasSubstr("kubectl label namespace web booster.dev/enabled=true"));
    EXPECT_THAT(why, HasSubstr("--enabled-namespaces"));
  }
  EXPECT_THAT(NamespaceRefusal(p, "web", nullptr), HasSubstr("has not opted in"));
  const kube::Json odd = kube::Json::parse(R"({"metadata": {"labels": ["x"]}})");
  EXPECT_THAT(NamespaceRefusal(p, "web", &odd), HasSubstr("has not opted in"));
}

TEST(NamespacePolicyTest, AnUnreadableLabelIsNotOfferedAsAWayIn) {
  NamespacePolicy p{.enabled = {"shop"}, .label = "booster.dev/enabled", .label_readable = false};
  const kube::Json labelled = Namespace("web", "true");
  std::string why = NamespaceRefusal(p, "web", &labelled);
  EXPECT_THAT(why, HasSubstr("has not opted in"));
  EXPECT_THAT(why, ::testing::Not(HasSubstr("kubectl label")));
}

}  // namespace
}  // namespace booster::controller
