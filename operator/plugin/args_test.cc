#include "operator/plugin/args.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace booster::plugin {
namespace {

using ::testing::HasSubstr;

TEST(ParseArgsTest, VerbNameAndKubectlStyleFlagsInAnyOrder) {
  absl::StatusOr<Options> o =
      ParseArgs({"-n", "shop", "status", "web", "--kubeconfig=/k", "--context", "ctx", "-w"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->verb, Verb::kStatus);
  EXPECT_EQ(o->name, "web");
  EXPECT_EQ(o->namespace_, "shop");
  EXPECT_EQ(o->kubeconfig, "/k");
  EXPECT_EQ(o->context, "ctx");
  EXPECT_TRUE(o->watch);
}

TEST(ParseArgsTest, AttachedValuesOfShortAndLongFlags) {
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"get", "-nshop", "-ojson"},
                                             {"get", "-n=shop", "-o=json"},
                                             {"get", "--namespace=shop", "--output=json"},
                                             {"get", "--namespace", "shop", "--output", "json"}}) {
    absl::StatusOr<Options> o = ParseArgs(args);
    ASSERT_TRUE(o.ok()) << o.status();
    EXPECT_EQ(o->namespace_, "shop");
    EXPECT_EQ(o->output, "json");
  }
}

TEST(ParseArgsTest, GetTakesAnOptionalNameAndAllNamespaces) {
  absl::StatusOr<Options> o = ParseArgs({"get", "-A", "-o", "wide"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->all_namespaces);
  EXPECT_EQ(o->output, "wide");
  EXPECT_TRUE(o->name.empty());
  o = ParseArgs({"get", "web"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->name, "web");
}

TEST(ParseArgsTest, RequestTimeoutAndIntervalAreDurations) {
  absl::StatusOr<Options> o =
      ParseArgs({"status", "web", "--request-timeout", "3s", "--interval=250ms"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->request_timeout, absl::Seconds(3));
  EXPECT_EQ(o->poll_interval, absl::Milliseconds(250));
  o = ParseArgs({"get", "--request-timeout=7"});  // kubectl: a bare number is seconds
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->request_timeout, absl::Seconds(7));
}

TEST(ParseArgsTest, EveryVerbParsesWithAName) {
  for (Verb v : AllVerbs()) {
    absl::StatusOr<Options> o = ParseArgs({std::string(VerbName(v)), "web"});
    ASSERT_TRUE(o.ok()) << VerbName(v) << ": " << o.status();
    EXPECT_EQ(o->verb, v);
    EXPECT_EQ(o->name, "web");
  }
}

TEST(ParseArgsTest, HelpForEveryVerbAndForThePlugin) {
  for (Verb v : AllVerbs()) {
    for (const char* flag : {"--help", "-h"}) {
      // Help wins over a missing name.
      absl::StatusOr<Options> o = ParseArgs({std::string(VerbName(v)), flag});
      ASSERT_TRUE(o.ok()) << VerbName(v) << " " << flag << ": " << o.status();
      EXPECT_TRUE(o->help);
      EXPECT_EQ(o->verb, v);
    }
    absl::StatusOr<Options> o = ParseArgs({"help", std::string(VerbName(v))});
    ASSERT_TRUE(o.ok());
    EXPECT_TRUE(o->help);
    EXPECT_EQ(o->verb, v);
    const std::string usage = Usage(v);
    EXPECT_THAT(usage, HasSubstr(absl::StrCat("kubectl booster ", VerbName(v))));
    EXPECT_THAT(usage, HasSubstr("--namespace"));
  }
  absl::StatusOr<Options> o = ParseArgs({"--help"});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->help);
  EXPECT_EQ(o->verb, Verb::kNone);
  for (Verb v : AllVerbs()) EXPECT_THAT(Usage(Verb::kNone), HasSubstr(VerbName(v)));
}

TEST(ParseArgsTest, TheUsageSaysWhatEachActionWrites) {
  EXPECT_THAT(Usage(Verb::kPause), HasSubstr("booster.dev/paused=true"));
  EXPECT_THAT(Usage(Verb::kResume), HasSubstr("spec.rollout.paused"));
  EXPECT_THAT(Usage(Verb::kPromote), HasSubstr("booster.dev/promote-now"));
  EXPECT_THAT(Usage(Verb::kAbort), HasSubstr("booster.dev/abort"));
  EXPECT_THAT(Usage(Verb::kRetry), HasSubstr("booster.dev/retry"));
}

TEST(ParseArgsTest, MistakesAreRefusedWithAMessage) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{}, "no verb given"},
      {{"rollout", "web"}, "unknown verb \"rollout\""},
      {{"status"}, "status needs the profile's NAME"},
      {{"abort"}, "abort needs the profile's NAME"},
      {{"pause", "a", "b"}, "pause takes one profile name, got 2"},
      {{"get", "--bogus"}, "unknown flag --bogus"},
      {{"get", "-n"}, "flag -n needs a value"},
      {{"get", "-o", "yaml"}, "unsupported output format \"yaml\""},
      {{"status", "web", "-A"}, "flag --all-namespaces is for get, not for status"},
      {{"explain", "web", "-o", "json"}, "flag --output is for get, not for explain"},
      {{"get", "-w"}, "flag --watch is for status, not for get"},
      {{"get", "web", "-A"}, "a NAME cannot be used with --all-namespaces"},
      {{"get", "-A", "-n", "x"}, "--namespace and --all-namespaces exclude each other"},
      {{"get", "--request-timeout", "soon"}, "invalid value \"soon\" for --request-timeout"},
      {{"get", "--request-timeout=0s"}, "--request-timeout must be positive"},
      {{"get", "--all-namespaces=yes"}, "flag --all-namespaces takes no value"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Options> o = ParseArgs(c.args);
    ASSERT_FALSE(o.ok()) << absl::StrJoin(c.args, " ");
    EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(o.status().message(), HasSubstr(c.message)) << absl::StrJoin(c.args, " ");
  }
}

TEST(ParseArgsTest, ADoubleDashEndsTheFlags) {
  absl::StatusOr<Options> o = ParseArgs({"status", "--", "-odd-name"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->name, "-odd-name");
}

}  // namespace
}  // namespace booster::plugin
