#include "document.hpp"

#include <hotscope/hotscope.hpp>

#include <cctype>
#include <charconv>

namespace demo {

const Node* Node::find(std::string_view key) const {
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == key) {
      return &items[i];
    }
  }
  return nullptr;
}

namespace {

class Parser {
public:
  explicit Parser(std::string_view text) : text_(text) {}

  Node parse() {
    Node root = parse_value();
    skip_space();
    if (pos_ != text_.size()) {
      fail("trailing characters");
    }
    return root;
  }

private:
  [[noreturn]] void fail(const char* what) const {
    throw ParseError(std::string(what) + " at offset " + std::to_string(pos_));
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])) != 0) {
      ++pos_;
    }
  }

  char peek() {
    skip_space();
    if (pos_ >= text_.size()) {
      fail("unexpected end");
    }
    return text_[pos_];
  }

  void expect(char c) {
    if (peek() != c) {
      fail("unexpected character");
    }
    ++pos_;
  }

  // Not instrumented: it runs for every leaf value, and parse_object/parse_array already
  // show the recursion.
  Node parse_value() {
    switch (peek()) {
    case '{':
      return parse_object();
    case '[':
      return parse_array();
    case '"': {
      Node node;
      node.kind = Node::Kind::string;
      node.text = parse_string();
      return node;
    }
    case 'n':
      if (text_.substr(pos_, 4) != "null") {
        fail("bad literal");
      }
      pos_ += 4;
      return Node{};
    default:
      return parse_number();
    }
  }

  Node parse_object() {
    HOTSCOPE_FUNCTION();
    Node node;
    node.kind = Node::Kind::object;
    expect('{');
    if (peek() == '}') {
      ++pos_;
      return node;
    }
    while (true) {
      node.keys.push_back(parse_string());
      expect(':');
      node.items.push_back(parse_value());
      if (peek() == '}') {
        ++pos_;
        return node;
      }
      expect(',');
    }
  }

  Node parse_array() {
    HOTSCOPE_FUNCTION();
    Node node;
    node.kind = Node::Kind::array;
    expect('[');
    if (peek() == ']') {
      ++pos_;
      return node;
    }
    while (true) {
      node.items.push_back(parse_value());
      if (peek() == ']') {
        ++pos_;
        return node;
      }
      expect(',');
    }
  }

  std::string parse_string() {
    expect('"');
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) {
        ++pos_;
      }
      out.push_back(text_[pos_++]);
    }
    if (pos_ >= text_.size()) {
      fail("unterminated string");
    }
    ++pos_;
    return out;
  }

  Node parse_number() {
    Node node;
    node.kind = Node::Kind::number;
    const char* first = text_.data() + pos_;
    const auto [end, error] = std::from_chars(first, text_.data() + text_.size(), node.number);
    if (error != std::errc{}) {
      fail("bad number");
    }
    pos_ += static_cast<std::size_t>(end - first);
    return node;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

void serialize_string(const std::string& text, std::string& out) {
  out.push_back('"');
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
    }
    out.push_back(c);
  }
  out.push_back('"');
}

constexpr const char* words[] = {"alpha", "bravo",  "charlie", "delta",  "echo",   "foxtrot",
                                 "golf",  "hotel",  "india",   "juliet", "kilo",   "lima",
                                 "mike",  "oscar",  "papa",    "quebec", "romeo",  "sierra",
                                 "tango", "victor", "whiskey", "xray",   "yankee", "zulu"};

std::string random_text(std::mt19937_64& rng) {
  std::uniform_int_distribution<std::size_t> word(0, std::size(words) - 1);
  std::uniform_int_distribution<int> count(1, 6);
  std::string text;
  for (int i = count(rng); i > 0; --i) {
    text += words[word(rng)];
    text.push_back(i > 1 ? ' ' : '.');
  }
  return text;
}

Node number_node(double value) {
  Node node;
  node.kind = Node::Kind::number;
  node.number = value;
  return node;
}

} // namespace

Node parse_document(std::string_view text) {
  HOTSCOPE_FUNCTION();
  return Parser(text).parse();
}

void serialize(const Node& node, std::string& out) {
  switch (node.kind) {
  case Node::Kind::null:
    out += "null";
    break;
  case Node::Kind::number: {
    char buffer[32];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, node.number);
    out.append(buffer, result.ptr);
    break;
  }
  case Node::Kind::string:
    serialize_string(node.text, out);
    break;
  case Node::Kind::array:
    out.push_back('[');
    for (std::size_t i = 0; i < node.items.size(); ++i) {
      if (i > 0) {
        out.push_back(',');
      }
      serialize(node.items[i], out);
    }
    out.push_back(']');
    break;
  case Node::Kind::object:
    out.push_back('{');
    for (std::size_t i = 0; i < node.items.size(); ++i) {
      if (i > 0) {
        out.push_back(',');
      }
      serialize_string(node.keys[i], out);
      out.push_back(':');
      serialize(node.items[i], out);
    }
    out.push_back('}');
    break;
  }
}

Node random_tree(std::mt19937_64& rng, int depth) {
  std::uniform_int_distribution<int> fields(1, 5);
  std::uniform_int_distribution<int> kind(0, 9);
  Node node;
  node.kind = Node::Kind::object;
  for (int i = fields(rng); i > 0; --i) {
    node.keys.push_back(words[rng() % std::size(words)] + std::to_string(i));
    const int pick = kind(rng);
    Node child;
    if (depth > 0 && pick < 3) {
      child = random_tree(rng, depth - 1);
    } else if (depth > 0 && pick < 5) {
      child.kind = Node::Kind::array;
      for (int n = fields(rng) * 2; n > 0; --n) {
        child.items.push_back(depth > 1 && n % 3 == 0
                                  ? random_tree(rng, depth - 2)
                                  : number_node(static_cast<double>(rng() % 100000) / 8));
      }
    } else if (pick < 8) {
      child.kind = Node::Kind::string;
      child.text = random_text(rng);
    } else {
      child = number_node(static_cast<double>(rng() % 1000));
    }
    node.items.push_back(std::move(child));
  }
  return node;
}

} // namespace demo
