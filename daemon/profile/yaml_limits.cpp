#include "profile/yaml_limits.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <sstream>
#include <vector>

namespace p2pnode::profile {
namespace {

// Thrown out of the parser's callbacks to stop at the first breach.
struct Breach {
  YamlLimitBreach what;
};

// Counts each node once per place it appears, aliases expanded, saturating far above any limit so a
// bomb of 10^30 nodes cannot overflow. yaml-cpp numbers anchors 1, 2, … in the order OnAnchor names
// them, which is how an alias's number finds its anchor's name, position and size.
class LimitChecker : public YAML::EventHandler {
 public:
  explicit LimitChecker(const YamlLimits& limits) : limits_(limits) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnAnchor(const YAML::Mark& mark, const std::string& name) override {
    anchors_.push_back({name, mark, 0, false});
  }
  void OnNull(const YAML::Mark&, YAML::anchor_t anchor) override { leaf(anchor); }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t anchor, const std::string&) override {
    leaf(anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Anchor* a = find(anchor);
    if (a == nullptr) {
      return;  // yaml-cpp refuses an unknown alias itself
    }
    if (!a->closed) {
      fail(mark, "the alias *" + a->name + " refers to the node it is inside (anchored &" + a->name + " at line " +
                     std::to_string(a->mark.line + 1) +
                     "): that is a cycle; an alias may only repeat a node that ends before it");
    }
    alias_nodes_ = add(alias_nodes_, a->size);
    if (alias_nodes_ > limits_.max_alias_nodes) {
      fail(mark, "aliases expand to more than " + std::to_string(limits_.max_alias_nodes) + " nodes (at *" + a->name +
                     "): an alias bomb? write the values out or use fewer aliases");
    }
    count_in_parent(a->size);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Anchor {
    std::string name;
    YAML::Mark mark;
    std::size_t size;
    bool closed;
  };
  struct Open {
    YAML::anchor_t anchor;
    std::size_t size;
  };

  static constexpr std::size_t kSaturated = std::size_t{1} << 48;
  static std::size_t add(std::size_t a, std::size_t b) { return std::min(kSaturated, a + std::min(kSaturated, b)); }

  Anchor* find(YAML::anchor_t id) { return id >= 1 && id <= anchors_.size() ? &anchors_[id - 1] : nullptr; }
  void leaf(YAML::anchor_t anchor) {
    if (Anchor* a = find(anchor)) {
      a->size = 1;
      a->closed = true;
    }
    count_in_parent(1);
  }
  void open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (stack_.size() >= limits_.max_depth) {
      fail(mark, "mappings and lists are nested more than " + std::to_string(limits_.max_depth) + " deep");
    }
    stack_.push_back({anchor, 1});
  }
  void close() {
    if (stack_.empty()) { return; }
    const Open done = stack_.back();
    stack_.pop_back();
    if (Anchor* a = find(done.anchor)) {
      a->size = done.size;
      a->closed = true;
    }
    count_in_parent(done.size);
  }
  void count_in_parent(std::size_t n) {
    if (!stack_.empty()) { stack_.back().size = add(stack_.back().size, n); }
  }
  [[noreturn]] static void fail(const YAML::Mark& mark, std::string message) {
    throw Breach{{mark.line >= 0 ? mark.line + 1 : 0, mark.column >= 0 ? mark.column + 1 : 0, std::move(message)}};
  }

  const YamlLimits& limits_;
  std::vector<Anchor> anchors_;
  std::vector<Open> stack_;
  std::size_t alias_nodes_ = 0;
};

}  // namespace

std::optional<YamlLimitBreach> find_yaml_limit_breach(std::string_view text, const YamlLimits& limits) {
  std::istringstream in{std::string(text)};
  try {
    YAML::Parser parser(in);
    LimitChecker checker(limits);
    parser.HandleNextDocument(checker);
  } catch (const Breach& b) { return b.what; } catch (const YAML::Exception&) {
    return std::nullopt;  // a syntax error: YAML::Load says which
  }
  return std::nullopt;
}

}  // namespace p2pnode::profile
