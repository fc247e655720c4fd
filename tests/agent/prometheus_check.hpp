// Checks a text exposition against the rules of Prometheus's text format 0.0.4, including those
// promtool 2.42 does not check (histograms: le ascending, cumulative counts, +Inf = _count).
// Returns one line per problem; none means valid.
#pragma once

#include <cmath>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace hotscope::testing {

inline std::vector<std::string> prometheus_problems(const std::string& text) {
  std::vector<std::string> problems;
  if (text.empty() || text.back() != '\n') {
    problems.push_back("the last line does not end with a line feed");
  }
  static const std::regex help(R"(# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*))");
  static const std::regex type(
      R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|summary|histogram))");
  static const std::regex sample(R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+))");
  // One label: a name, then a value whose only escapes are \\, \" and \n.
  static const std::regex label(R"(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)\"(,|$))");

  std::map<std::string, std::string> types; // family -> type
  std::set<std::string> helped, finished, series;
  std::string current; // the family whose lines are being read
  // Per summary series (labels without quantile): the last quantile seen, and _sum/_count.
  std::map<std::string, double> last_quantile;
  std::map<std::string, int> sum_count;
  // Per histogram series (labels without le): the last bound and count, +Inf's count, _count.
  struct Buckets {
    double bound = -INFINITY;
    double count = 0;
    double infinite = -1;
    double total = -1;
  };
  std::map<std::string, Buckets> buckets;

  std::istringstream lines(text);
  std::string line;
  int number = 0;
  auto problem = [&](const std::string& what) {
    problems.push_back("line " + std::to_string(number) + ": " + what + ": " + line);
  };
  auto enter = [&](const std::string& family) {
    if (family != current) {
      if (finished.count(family) != 0) {
        problem("family " + family + " is not contiguous");
      }
      if (!current.empty()) {
        finished.insert(current);
      }
      current = family;
    }
  };
  while (std::getline(lines, line)) {
    ++number;
    std::smatch match;
    if (std::regex_match(line, match, help)) {
      enter(match[1]);
      helped.insert(match[1]);
    } else if (std::regex_match(line, match, type)) {
      enter(match[1]);
      if (types.count(match[1]) != 0) {
        problem("second TYPE");
      }
      types[match[1]] = match[2];
      if (match[2] == "counter" && !match[1].str().ends_with("_total")) {
        problem("counter name without _total");
      }
    } else if (std::regex_match(line, match, sample)) {
      std::string name = match[1];
      std::string family = name;
      for (const char* suffix : {"_sum", "_count", "_bucket"}) {
        const std::string base = name.substr(0, name.size() - std::string(suffix).size());
        if (name.ends_with(suffix) && types.count(base) != 0 &&
            (types[base] == "histogram" ||
             (types[base] == "summary" && name != base + "_bucket"))) {
          family = base;
        }
      }
      if (types.count(family) == 0) {
        problem("sample before its TYPE");
      }
      if (helped.count(family) == 0) {
        problem("sample without HELP");
      }
      enter(family);
      std::string labels = match[3];
      std::string without_quantile;
      double quantile = -1;
      std::string le;
      for (std::smatch one; !labels.empty(); labels = one.suffix()) {
        if (!std::regex_search(labels, one, label) || one.position(0) != 0) {
          problem("bad label set");
          break;
        }
        if (one[1] == "quantile" && types[family] == "summary") {
          quantile = std::strtod(one[2].str().c_str(), nullptr);
        } else if (one[1] == "le" && types[family] == "histogram") {
          le = one[2];
        } else {
          without_quantile +=
              (without_quantile.empty() ? "" : ",") + one[1].str() + "=\"" + one[2].str() + "\"";
        }
      }
      if (!series.insert(name + "{" + match[3].str() + "}").second) {
        problem("series repeated");
      }
      const std::string value = match[4];
      char* end = nullptr;
      const double number = std::strtod(value.c_str(), &end);
      if (*end != '\0' && value != "NaN" && value != "+Inf" && value != "-Inf") {
        problem("value is not a float");
      }
      if (types[family] == "summary") {
        const std::string key = family + "{" + without_quantile + "}";
        if (name == family) {
          if (quantile < 0 || quantile > 1) {
            problem("summary sample without a quantile in 0..1");
          }
          if (last_quantile.count(key) != 0 && quantile <= last_quantile[key]) {
            problem("quantiles not increasing");
          }
          last_quantile[key] = quantile;
        } else {
          ++sum_count[key];
        }
      }
      if (types[family] == "histogram") {
        Buckets& series_buckets = buckets[family + "{" + without_quantile + "}"];
        if (name == family + "_bucket") {
          const double bound = le == "+Inf" ? INFINITY : std::strtod(le.c_str(), nullptr);
          if (le.empty() || bound <= series_buckets.bound) {
            problem("bucket without an le above the previous one");
          }
          if (number < series_buckets.count) {
            problem("bucket counts not cumulative");
          }
          series_buckets.bound = bound;
          series_buckets.count = number;
          if (le == "+Inf") {
            series_buckets.infinite = number;
          }
        } else if (name == family + "_count") {
          series_buckets.total = number;
        } else if (name == family) {
          problem("histogram sample without a suffix");
        }
      }
    } else if (!line.empty() && line[0] != '#') {
      problem("not a sample");
    }
  }
  for (const auto& [key, series_buckets] : buckets) {
    if (series_buckets.infinite < 0 || series_buckets.infinite != series_buckets.total) {
      problems.push_back("histogram " + key + " lacks a +Inf bucket equal to its _count");
    }
  }
  for (const auto& [key, quantile] : last_quantile) {
    if (sum_count[key] != 2) {
      problems.push_back("summary " + key + " lacks _sum or _count");
    }
  }
  return problems;
}

} // namespace hotscope::testing
