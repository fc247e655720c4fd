// Guest text made safe to keep: exporters write it into JSON and terminals.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace hotscope::guest {

// Why `text` is not printable UTF-8 (a control character or a broken sequence), or nothing.
std::optional<std::string> unprintable(std::string_view text);
// Cuts `text` to at most `bytes`, never inside a UTF-8 sequence.
std::string_view cut_utf8(std::string_view text, std::size_t bytes);

} // namespace hotscope::guest
