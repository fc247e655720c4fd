// The text component (src/text): the JSON writer and the formatting helpers, against what fmt and
// nlohmann_json write for the same input, which the exporters' output used to be.
#include "text/text.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

namespace hotscope::text {
namespace {

std::string json_string(std::string_view text) {
  std::string out;
  append_json_string(out, text);
  return out;
}

std::string json_number(double value) {
  std::string out;
  append_json_number(out, value);
  return out;
}

std::string nlohmann_dump(const nlohmann::ordered_json& json, int indent = -1) {
  return json.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

TEST(TextCat, WritesEachPartAsFmtDoes) {
  const unsigned char byte = 200;
  const std::string name = "load";
  EXPECT_EQ(cat("x=", -42, ' ', std::uint64_t{18446744073709551615u}, " b=", byte, " ", name, " ",
                true, std::string_view("!")),
            fmt::format("x={} {} b={} {} {}{}", -42, std::uint64_t{18446744073709551615u}, byte,
                        name, true, "!"));
  std::int64_t smallest = std::numeric_limits<std::int64_t>::min();
  EXPECT_EQ(cat(smallest), fmt::format("{}", smallest));
}

TEST(TextFixed, MatchesFmtForEveryPrecisionUsed) {
  std::mt19937_64 random(31);
  std::uniform_real_distribution<double> mantissa(-10.0, 10.0);
  std::uniform_int_distribution<int> exponent(-12, 18);
  for (int i = 0; i < 20000; ++i) {
    const double value = mantissa(random) * std::pow(10.0, exponent(random));
    for (const int precision : {0, 1, 2, 3}) {
      ASSERT_EQ(fixed(value, precision), fmt::format("{:.{}f}", value, precision)) << value;
    }
  }
  EXPECT_EQ(fixed(0.125, 2), "0.12"); // the binary value's exact rounding, as printf
  EXPECT_EQ(fixed(-0.0, 1), "-0.0");
  EXPECT_EQ(fixed(1e300, 0), fmt::format("{:.0f}", 1e300));
}

TEST(TextHex, PadsToTheDigitsAsked) {
  EXPECT_EQ(hex(0), "0");
  EXPECT_EQ(hex(0xabc), "abc");
  EXPECT_EQ(hex(7, 2), "07");
  EXPECT_EQ(hex(0xff, 2), "ff");
  EXPECT_EQ(hex(0x1234, 2), "1234");
  EXPECT_EQ(hex(std::numeric_limits<std::uint64_t>::max()), "ffffffffffffffff");
}

TEST(TextPad, CountsCodePointsAsColumns) {
  EXPECT_EQ(columns("1.50 µs"), 7u);
  EXPECT_EQ(pad_right("ab", 4), "ab  ");
  EXPECT_EQ(pad_left("µs", 4), "  µs");
  EXPECT_EQ(pad_right("toolong", 3), "toolong");
  EXPECT_EQ(pad_right("12.5ms", 9), fmt::format("{:<9}", "12.5ms"));
  EXPECT_EQ(pad_right("", 6), fmt::format("{:{}}", "", 6));
}

TEST(TextJsonString, EscapesAsNlohmann) {
  EXPECT_EQ(json_string("plain"), "\"plain\"");
  EXPECT_EQ(json_string("q\"b\\s/"), R"("q\"b\\s/")");
  EXPECT_EQ(json_string("\b\f\n\r\t\x01\x1f\x7f"), R"("\b\f\n\r\t\u0001\u001f)"
                                                   "\x7f\"");
  EXPECT_EQ(json_string(std::string_view("a\0b", 3)), R"("a\u0000b")");
  EXPECT_EQ(json_string("é €😀"), "\"é €😀\"");
  EXPECT_EQ(json_string("bad \xff end"), "\"bad \xEF\xBF\xBD end\"");
  // A wrong byte after a good lead is read again; a cut sequence at the end is one U+FFFD.
  EXPECT_EQ(json_string("\xe2\x28\xa1"), "\"\xEF\xBF\xBD(\xEF\xBF\xBD\"");
  EXPECT_EQ(json_string("x\xf0\x9f\x98"), "\"x\xEF\xBF\xBD\"");
}

// Every byte string of up to 3 bytes drawn from the bytes that matter, and random longer ones.
TEST(TextJsonString, MatchesNlohmannOnAnyBytes) {
  const unsigned char interesting[] = {0x00, 0x08, 0x1f, '"',  '\\', 'a',  0x7f, 0x80, 0x8f,
                                       0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0,
                                       0xe1, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf4, 0xf5, 0xff};
  std::string text;
  const auto check = [&] {
    ASSERT_EQ(json_string(text), nlohmann_dump(nlohmann::json(text)))
        << testing::PrintToString(text);
  };
  for (const unsigned char a : interesting) {
    for (const unsigned char b : interesting) {
      for (const unsigned char c : interesting) {
        text = {static_cast<char>(a), static_cast<char>(b), static_cast<char>(c)};
        check();
        text.resize(2);
        check();
      }
    }
  }
  std::mt19937 random(31);
  for (int i = 0; i < 20000; ++i) {
    text.resize(random() % 12);
    for (char& c : text) {
      c = static_cast<char>(interesting[random() % sizeof interesting]);
    }
    check();
  }
}

TEST(TextJsonNumber, MatchesNlohmann) {
  for (const double value :
       {0.0, -0.0, 1.0, -1.5, 0.1, 1e-4, 1.5e-5, 123456.789, 3e9, 999999999999999.0, 1e15, 1e16,
        1e20, 1.7976931348623157e308, 5e-324, 1e-7, 1666.6666666666667, 2.5e-300}) {
    EXPECT_EQ(json_number(value), nlohmann_dump(value)) << value;
  }
  EXPECT_EQ(json_number(std::numeric_limits<double>::quiet_NaN()), "null");
  EXPECT_EQ(json_number(-std::numeric_limits<double>::infinity()), "null");
  // Any double: the same layout as nlohmann's, and digits that read back as the value. Where
  // nlohmann's Grisu2 misses the shortest or closest digits, ours are those.
  std::mt19937_64 random(31);
  for (int i = 0; i < 100000; ++i) {
    double value;
    const std::uint64_t bits = random();
    std::memcpy(&value, &bits, sizeof value);
    if (!std::isfinite(value)) {
      continue;
    }
    const std::string ours = json_number(value);
    const std::string theirs = nlohmann_dump(value);
    ASSERT_EQ(std::strtod(ours.c_str(), nullptr), value) << ours;
    if (ours != theirs) {
      ASSERT_LE(ours.size(), theirs.size()) << ours << " " << theirs;
      ASSERT_EQ(ours.find('e') == std::string::npos, theirs.find('e') == std::string::npos);
    }
  }
}

TEST(TextJsonWriter, LaysOutAsNlohmannIndentedAndOnOneLine) {
  nlohmann::ordered_json expected = {{"name", "demo"},
                                     {"pid", 4242},
                                     {"delta", -3},
                                     {"ok", true},
                                     {"rate", 0.25},
                                     {"none", nullptr},
                                     {"empty_object", nlohmann::ordered_json::object()},
                                     {"empty_array", nlohmann::ordered_json::array()},
                                     {"list", {1, "two", {{"three", 3}}}}};
  for (const int indent : {-1, 2}) {
    std::string out;
    JsonWriter json(out, indent);
    json.begin_object()
        .member("name", "demo")
        .member("pid", std::uint32_t{4242})
        .member("delta", -3)
        .member("ok", true)
        .member("rate", 0.25)
        .key("none")
        .null()
        .key("empty_object")
        .begin_object()
        .end_object()
        .key("empty_array")
        .begin_array()
        .end_array()
        .key("list")
        .begin_array()
        .value(1)
        .value(std::string("two"))
        .begin_object()
        .member("three", 3)
        .end_object()
        .end_array()
        .end_object();
    EXPECT_EQ(out, nlohmann_dump(expected, indent)) << indent;
  }
}

} // namespace
} // namespace hotscope::text
