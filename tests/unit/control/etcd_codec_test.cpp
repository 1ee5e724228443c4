// The pure parts of the etcd store: base64 as the JSON gateway carries
// bytes, prefix range ends, names, and a VPC's JSON.
#include <gtest/gtest.h>

#include "control/plan/etcd_client.hpp"
#include "control/plan/etcd_store.hpp"

namespace mcgw::plan {
namespace {

TEST(EtcdBase64, EncodesAndDecodesRfc4648Vectors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
      {std::string("\0\xff\xfe", 3), "AP/+"},
  };
  for (const auto& [bytes, text] : cases) {
    EXPECT_EQ(etcd::base64Encode(bytes), text);
    auto back = etcd::base64Decode(text);
    ASSERT_TRUE(back) << text;
    EXPECT_EQ(*back, bytes) << text;
  }
}

TEST(EtcdBase64, RefusesWhatIsNotBase64) {
  for (const char* text :
       {"Zm9", "Zm9v\n", " Zm9v", "Zm=v", "=Zm9", "Zg=a", "Zm9v!!!!", "Z===", "Zm9-"}) {
    EXPECT_FALSE(etcd::base64Decode(text)) << text;
  }
}

TEST(EtcdPrefixEnd, IncrementsTheLastByteThatCan) {
  EXPECT_EQ(etcd::prefixEnd("/mcgw/plan/"), "/mcgw/plan0");
  EXPECT_EQ(etcd::prefixEnd("a\xff"), "b");
  EXPECT_EQ(etcd::prefixEnd("\xff\xff"), std::string(1, '\0'));
  EXPECT_EQ(etcd::prefixEnd(""), std::string(1, '\0'));
}

TEST(EtcdStoreNames, FollowTheConfigNameType) {
  for (const char* ok : {"a", "vpc-1", "A.b_c-d",
                         "x23456789012345678901234567890123456789012345678901234567890123"}) {
    EXPECT_TRUE(isValidName(ok)) << ok;
  }
  for (const char* bad : {"", "1vpc", "-a", "a b", "a/b", "caf\xc3\xa9", "a\x1b",
                          "x234567890123456789012345678901234567890123456789012345678901234"}) {
    EXPECT_FALSE(isValidName(bad)) << bad;
  }
}

TEST(EtcdStoreVpcJson, RoundTripsAndSaysWhatIsWrong) {
  StoredVpc v{"vpc-a",
              "aliyun",
              "cn-hangzhou",
              {*IpPrefix::parse("172.16.0.0/12"), *IpPrefix::parse("2001:db8::/32")},
              "",
              "",
              "",
              "import:aliyun"};
  const std::string text = vpcToJson(v);
  EXPECT_EQ(text, R"({"cloud":"aliyun","name":"vpc-a","pool":"","prefixes":["172.16.0.0/12",)"
                  R"("2001:db8::/32"],"region":"cn-hangzhou","site":"","source":"import:aliyun",)"
                  R"("tenant":""})");
  auto back = vpcFromJson(text);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(*back, v);

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"[]", R"(the value is not a JSON object: "[]")"},
      {R"({"name":"a","cloud":"c","region":"r"})", "field prefixes is not an array"},
      {R"({"name":"a","cloud":"c","region":"r","prefixes":[]})",
       "VPC \"a\": 0 prefixes; a VPC has 1..64"},
      {R"({"name":"a","cloud":"c","region":"r","prefixes":[7]})", R"(prefix "7" does not parse)"},
      {R"({"name":"a","cloud":"c","region":"r","prefixes":["10.0.0.0/8"],"site":"x y"})",
       R"(VPC "a": pool, tenant or site "x y" is not a valid name)"},
      {R"({"name":"a","cloud":"c","region":"r","prefixes":["10.0.0.0/8"],"source":"\u202e"})",
       R"(VPC "a": source "\u202E" is not valid)"},
      {std::string(20000, ' '), "the value is 20000 bytes (at most 16384)"},
  };
  for (const auto& [json, message] : bad) {
    auto r = vpcFromJson(json);
    ASSERT_FALSE(r) << json;
    EXPECT_EQ(r.error(), message);
  }
}

}  // namespace
}  // namespace mcgw::plan
