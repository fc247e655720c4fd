// How each kind of variable is read, for every reader of the configuration (parse(),
// parse_heap(), read_on_signal()): a bad value becomes one line naming the variable, the problem
// and the value kept. The heap preload library reads its variables with these too.
#pragma once

#include "config/config.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hotscope::config::variables {

// A whole decimal number, all of `text`; nothing for anything else.
std::optional<unsigned long long> whole_number(std::string_view text);

// An integer variable in [low, high] (a power of two too, with `power_of_two`), described as
// `what` ("a record count"). A bad value keeps `value`.
void read_number(const Getenv& getenv, const char* name, unsigned long long low,
                 unsigned long long high, const char* what, bool power_of_two,
                 unsigned long long& value, std::vector<std::string>& errors);

template <class T>
void read_number(const Getenv& getenv, const char* name, unsigned long long low,
                 unsigned long long high, const char* what, bool power_of_two, T& value,
                 std::vector<std::string>& errors) {
  unsigned long long whole = value;
  read_number(getenv, name, low, high, what, power_of_two, whole, errors);
  value = static_cast<T>(whole);
}

// A 0/1 switch. A bad value keeps `value`.
void read_switch(const Getenv& getenv, const char* name, bool& value,
                 std::vector<std::string>& errors);

// HOTSCOPE_OUT: the directory, or nothing when it is unset or set but empty (which is one line).
std::optional<std::string> read_out_dir(const Getenv& getenv, std::vector<std::string>& errors);

} // namespace hotscope::config::variables
