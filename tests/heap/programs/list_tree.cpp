// Exactness workload 1: pointer structures. A binary search tree and a linked list built from
// new and malloc, half of them freed, some leaked; records grown and shrunk with realloc.
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

struct TreeNode {
  std::uint32_t key;
  TreeNode* left = nullptr;
  TreeNode* right = nullptr;
};

struct ListNode {
  ListNode* next;
  char* payload;
};

std::uint32_t next_random(std::uint32_t& state) {
  state = state * 1664525u + 1013904223u;
  return state >> 8;
}

TreeNode* insert(TreeNode* root, std::uint32_t key) {
  if (root == nullptr) {
    return new TreeNode{key};
  }
  TreeNode*& child = key < root->key ? root->left : root->right;
  child = insert(child, key);
  return root;
}

void destroy(TreeNode* node) {
  if (node != nullptr) {
    destroy(node->left);
    destroy(node->right);
    delete node;
  }
}

// A record that grows in steps and is finally trimmed to its used length.
char* build_record(std::uint32_t& state) {
  std::size_t capacity = 8;
  std::size_t used = 0;
  char* record = static_cast<char*>(std::malloc(capacity));
  const std::size_t length = 20 + next_random(state) % 200;
  while (used < length) {
    if (used == capacity) {
      capacity *= 2;
      record = static_cast<char*>(std::realloc(record, capacity));
    }
    record[used] = static_cast<char>('a' + used % 26);
    ++used;
  }
  return static_cast<char*>(std::realloc(record, used));
}

} // namespace

int main() {
  std::uint32_t state = 12345;
  TreeNode* kept = nullptr;
  TreeNode* dropped = nullptr;
  for (int i = 0; i < 3000; ++i) {
    const std::uint32_t key = next_random(state);
    if (i % 2 == 0) {
      kept = insert(kept, key);
    } else {
      dropped = insert(dropped, key);
    }
  }
  destroy(dropped);

  ListNode* list = nullptr;
  for (int i = 0; i < 500; ++i) {
    auto* node = static_cast<ListNode*>(std::calloc(1, sizeof(ListNode)));
    node->payload = build_record(state);
    node->next = list;
    list = node;
  }
  // Free every other node; the rest, and the kept tree, leak.
  std::size_t checksum = 0;
  for (ListNode** link = &list; *link != nullptr;) {
    ListNode* node = *link;
    checksum += std::strlen(node->payload) > 0 ? node->payload[0] : 0;
    if (checksum % 2 == 0) {
      *link = node->next;
      std::free(node->payload);
      std::free(node);
    } else {
      link = &node->next;
    }
  }
  return kept != nullptr && checksum > 0 ? 0 : 1;
}
