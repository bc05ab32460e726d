// The tokens file loader: what it accepts (the README's example among it) and what it refuses, with messages
// that name the entry and what is allowed.
#include "config/access_policy.h"

#include <string>

#include "gtest/gtest.h"
#include "tests/config/config_testing.h"

namespace lawn {
namespace {

using config_testing::IsInvalid;

constexpr char kHash[] = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

std::string Entry(const std::string& body) { return std::string("tokens:\n  - name: a\n") + body; }

TEST(AccessPolicyTest, ParsesTokensSubjectsAndGrants) {
  absl::StatusOr<AccessPolicy> policy = ParseAccessPolicy(
      std::string("tokens:\n"
                  "  - name: billing-app\n    sha256: ") + kHash + "\n    grants:\n"
      "      - namespaces: [\"billing\", \"billing-*\"]\n        permissions: [start, delete, read, subscribe]\n"
      "  - name: worker\n    subject: billing-worker\n    grants:\n"
      "      - namespaces: [billing]\n        permissions: [observe]\n"
      "  - name: ops\n    sha256: " + std::string(64, 'A') + "\n    grants:\n"
      "      - namespaces: [\"*\"]\n        permissions: [admin, read]\n"
      "  - name: nobody\n    sha256: " + std::string(64, 'b') + "\n    grants: []\n");
  ASSERT_TRUE(policy.ok()) << policy.status();
  ASSERT_EQ(policy->principals.size(), 4u);
  const Principal& app = policy->principals[0];
  EXPECT_EQ(app.name, "billing-app");
  ASSERT_EQ(app.sha256.size(), 32u);
  EXPECT_EQ(static_cast<unsigned char>(app.sha256[0]), 0x9f);
  EXPECT_EQ(static_cast<unsigned char>(app.sha256[31]), 0x08);
  ASSERT_EQ(app.grants.size(), 1u);
  EXPECT_EQ(app.grants[0].namespaces, (std::vector<std::string>{"billing", "billing-*"}));
  EXPECT_EQ(app.grants[0].permissions, kPermStart | kPermDelete | kPermRead | kPermSubscribe);
  EXPECT_EQ(policy->principals[1].subject, "billing-worker");
  EXPECT_TRUE(policy->principals[1].sha256.empty());
  EXPECT_EQ(policy->principals[2].grants[0].permissions, kPermAdmin | kPermRead);
  EXPECT_EQ(static_cast<unsigned char>(policy->principals[2].sha256[0]), 0xaa);  // Hex in either case.
  EXPECT_TRUE(policy->principals[3].grants.empty());
}

TEST(AccessPolicyTest, RefusesWithTheEntryAndWhatIsAllowed) {
  const std::string grant = "    grants:\n      - namespaces: [a]\n        permissions: [read]\n";
  EXPECT_TRUE(IsInvalid(ParseAccessPolicy("{}").status(), "expected a map with a `tokens:` list"));
  EXPECT_TRUE(IsInvalid(ParseAccessPolicy("tokens: []\nextra: 1\n").status(), "unknown key 'extra'"));
  EXPECT_TRUE(IsInvalid(ParseAccessPolicy(Entry(grant)).status(),
                        "tokens entry 1 (line 2): give exactly one of sha256 (a token) or subject"));
  EXPECT_TRUE(IsInvalid(ParseAccessPolicy(Entry("    sha256: " + std::string(kHash) + "\n    subject: x\n" + grant)).status(),
                        "give exactly one of sha256"));
  EXPECT_TRUE(IsInvalid(ParseAccessPolicy(Entry("    sha256: abc\n" + grant)).status(), "sha256: 64 hex digits"));
  EXPECT_TRUE(IsInvalid(ParseAccessPolicy(Entry("    sha256: " + std::string(64, 'g') + "\n" + grant)).status(),
                        "sha256: 64 hex digits"));
  EXPECT_TRUE(IsInvalid(ParseAccessPolicy(Entry("    sha256: " + std::string(kHash) + "\n")).status(), "grants is required"));
  EXPECT_TRUE(IsInvalid(
      ParseAccessPolicy(Entry("    sha256: " + std::string(kHash) +
                              "\n    grants:\n      - namespaces: [a]\n        permissions: [write]\n")).status(),
      "permission 'write' is unknown; allowed: start, delete, read, subscribe, observe, admin"));
  EXPECT_TRUE(IsInvalid(
      ParseAccessPolicy(Entry("    sha256: " + std::string(kHash) +
                              "\n    grants:\n      - namespaces: [billing]\n        permissions: [admin]\n")).status(),
      "admin is server-wide: grant it only with namespaces: [\"*\"]"));
  EXPECT_TRUE(IsInvalid(
      ParseAccessPolicy(Entry("    sha256: " + std::string(kHash) +
                              "\n    grants:\n      - namespaces: [\"a*b\"]\n        permissions: [read]\n")).status(),
      "namespace pattern 'a*b'"));
  EXPECT_TRUE(IsInvalid(ParseAccessPolicy("tokens:\n  - name: a\n    sha256: " + std::string(kHash) + "\n" + grant +
                                          "  - name: a\n    sha256: " + std::string(64, '0') + "\n" + grant)
                            .status(),
                        "name 'a' is repeated"));
  EXPECT_TRUE(IsInvalid(ParseAccessPolicy("tokens:\n  - name: a\n    sha256: " + std::string(kHash) + "\n" + grant +
                                          "  - name: b\n    sha256: " + std::string(kHash) + "\n" + grant)
                            .status(),
                        "sha256 is repeated"));
  EXPECT_TRUE(IsInvalid(ParseAccessPolicy("tokens:\n  - name: a\n    subject: s\n" + grant +
                                          "  - name: b\n    subject: s\n" + grant)
                            .status(),
                        "subject 's' is repeated"));
  EXPECT_TRUE(IsInvalid(ParseAccessPolicy("tokens: [\n").status(), "YAML syntax error"));
}

TEST(AccessPolicyTest, LoadNamesTheFile) {
  const absl::Status missing = LoadAccessPolicy("/nonexistent/tokens.yaml").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("/nonexistent/tokens.yaml"), std::string::npos);
}

}  // namespace
}  // namespace lawn
