// The API boundary: every request line gets one JSON response line, whatever
// its bytes, and nothing a handler does (throw, return text that is not
// UTF-8) ends the process or the response.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "config/text.hpp"
#include "control/api/json_text.hpp"
#include "control/api/server.hpp"

namespace mcgw::api {
namespace {

using nlohmann::json;
using namespace std::string_literals;

// A handler that echoes what it got.
json echo(const std::string& command, const json& args) {
  return {{"ok", true}, {"result", {{"command", command}, {"args", args}}}};
}

json parsed(const std::string& line) {
  EXPECT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line";
  json j = json::parse(line, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << line;
  EXPECT_EQ(j.value("version", 0), 1) << line;
  return j;
}

std::string errorOf(const std::string& request) {
  json j = parsed(answer(request, echo));
  EXPECT_EQ(j.value("ok", true), false) << j;
  return j.contains("error") ? j["error"].value("message", "") : "";
}

TEST(ApiAnswer, RequestsThatAreNotRight) {
  struct Case {
    std::string request;
    std::string message;
  } cases[] = {
      {"not json", "request is not valid JSON: at byte 2: invalid literal"},
      {"{\"version\": 1,",
       "request is not valid JSON: at byte 15: unexpected end of input; expected string literal"},
      {"", "request is not valid JSON: at byte 1: unexpected end of input"},
      {"{\"version\":1,\"command\":\"caf\xE9\"}",
       "request is not valid JSON: at byte 29: invalid string: ill-formed UTF-8 byte"},
      {"[1,2]", "request is an array, not a JSON object"},
      {"5", "request is a number, not a JSON object"},
      {R"({"version":2,"command":"status"})", "unsupported API version"},
      {R"({"version":"1","command":"status"})", "unsupported API version"},
      {R"({"version":4294967297,"command":"status"})", "unsupported API version"},
      {R"({"command":"status"})", "unsupported API version"},
      {R"({"version":1})", "request has no \"command\" string"},
      {R"({"version":1,"command":5})", "request has no \"command\" string"},
      {R"({"version":1,"command":"status","args":5})",
       "\"args\" must be an object, found a number"},
      {R"({"version":1,"command":"status","args":"x"})",
       "\"args\" must be an object, found a string"},
      {R"({"version":1,"command":"status","args":[]})",
       "\"args\" must be an object, found an array"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.request);
    EXPECT_EQ(errorOf(c.request).rfind(c.message, 0), 0u) << errorOf(c.request);
  }
}

TEST(ApiAnswer, ParseErrorsDoNotEchoTheRequest) {
  const std::string secret(5000, 'q');
  std::string message = errorOf("{\"version\":1,\"command\":" + secret);
  EXPECT_EQ(message.find("qqq"), std::string::npos) << message;
  EXPECT_LT(message.size(), 300u);
}

TEST(ApiAnswer, ArgsAreHandedOver) {
  json j = parsed(answer(R"({"version":1,"command":"x","args":{"a":"b"}})", echo));
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["result"]["args"], json({{"a", "b"}}));
  // Absent or null args are an empty object.
  for (const char* r :
       {R"({"version":1,"command":"x"})", R"({"version":1,"command":"x","args":null})"}) {
    j = parsed(answer(r, echo));
    EXPECT_EQ(j["result"]["args"], json::object()) << r;
  }
}

TEST(ApiAnswer, HandlerExceptionsBecomeErrors) {
  auto throws = [](const std::string&, const json&) -> json {
    throw std::runtime_error("boom \xE9\n");
  };
  json j = parsed(answer(R"({"version":1,"command":"x"})", throws));
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["error"]["message"], "internal error: boom \\xE9\\n");
  auto throws_int = [](const std::string&, const json&) -> json { throw 42; };
  j = parsed(answer(R"({"version":1,"command":"x"})", throws_int));
  EXPECT_EQ(j["error"]["message"], "internal error");
  auto json_error = [](const std::string&, const json& args) -> json {
    return {{"ok", true}, {"result", args.at("missing").get<int>()}};
  };
  j = parsed(answer(R"({"version":1,"command":"x"})", json_error));
  EXPECT_EQ(j["ok"], false);
}

// The crash of issue 11: a config string that is not UTF-8 in a response.
TEST(ApiAnswer, ResponsesWithBytesThatAreNotUtf8AreEscaped) {
  auto bad = [](const std::string&, const json&) -> json {
    return {{"ok", true},
            {"result",
             {{"description", "caf\xE9"},
              {"text", "line 1\nline 2 \xFF\\"},
              {"list", {"ok", "\xC0\xAF"}},
              {"k\xE9y", 1}}}};
  };
  json j = parsed(answer(R"({"version":1,"command":"x"})", bad));
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["result"]["description"], "caf\\xE9");
  EXPECT_EQ(j["result"]["text"], "line 1\nline 2 \\xFF\\\\");
  EXPECT_EQ(j["result"]["list"][1], "\\xC0\\xAF");
  EXPECT_EQ(j["result"]["k\\xE9y"], 1);
}

TEST(ApiAnswer, NonObjectResponsesAreErrors) {
  auto array = [](const std::string&, const json&) -> json { return json::array(); };
  json j = parsed(answer(R"({"version":1,"command":"x"})", array));
  EXPECT_EQ(j["ok"], false);
}

TEST(JsonText, DumpNeverThrows) {
  json j = {{"a", "\xE9"}, {"b", {1, 2, "\xFF\xFE"}}};
  EXPECT_THROW(j.dump(), json::type_error);
  std::string out;
  ASSERT_NO_THROW(out = dump(j));
  EXPECT_EQ(out, R"({"a":"\\xE9","b":[1,2,"\\xFF\\xFE"]})");
  EXPECT_FALSE(text::findProblem(out));
  // Valid documents are written exactly as nlohmann writes them.
  json ok = {{"x", "caf\xC3\xA9"}, {"n", 5}};
  EXPECT_EQ(dump(ok, 2), ok.dump(2));
}

}  // namespace
}  // namespace mcgw::api
