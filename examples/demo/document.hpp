// A small JSON-like document model: requests arrive as text and are parsed into a tree, so
// the profile shows a recursive parser with real allocations.
#ifndef DEMO_DOCUMENT_HPP
#define DEMO_DOCUMENT_HPP

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace demo {

struct Node {
  enum class Kind { null, number, string, array, object };

  Kind kind = Kind::null;
  double number = 0;
  std::string text;
  std::vector<Node> items;       // array elements, or object values
  std::vector<std::string> keys; // object keys, parallel to `items`

  // The value under `key` of an object, or nullptr.
  const Node* find(std::string_view key) const;
};

struct ParseError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws ParseError on malformed input.
Node parse_document(std::string_view text);

void serialize(const Node& node, std::string& out);

// A random object nested up to `depth` levels below the top.
Node random_tree(std::mt19937_64& rng, int depth);

} // namespace demo

#endif // DEMO_DOCUMENT_HPP
