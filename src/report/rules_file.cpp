// Reading a rules file (rules_file.h): its JSON, each field checked and named by its JSON pointer
// and line in every error.
#include "dumpsift/report/rules_file.h"

#include "dumpsift/sniff/sniffer.h"
#include "dumpsift/support/error.h"
#include "dumpsift/support/sizes.h"
#include "json_text.h"

#include <map>

namespace dumpsift {

using namespace detail;

namespace {

// The fields a rule may have, in the order docs/ci.md lists them.
const char *const kRuleFields[] = {"name",        "description",   "kind",           "size",
                                   "min_size",    "max_size",      "state",          "finding",
                                   "all_buffers", "warnings",      "dump_truncated", "max_bytes",
                                   "max_count",   "must_not_exist"};

// The fields of the top-level object.
const char *const kTopFields[] = {"version", "description", "allow_truncated_dump", "rules"};

// "a, b, c" from a list of names.
template <typename Range> std::string joined(const Range &names) {
  std::string out;
  for (const auto &n : names)
    out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

// Turns a rule file's fields into Rule values, naming the field (and its line) in every error.
class RulesParser {
public:
  explicit RulesParser(llvm::StringRef text) : lines_(jsonPointerLines(text)) {}

  // The whole file, already parsed as JSON.
  llvm::Expected<RuleSet> parse(const Json &root) {
    if (!root.is_object())
      return error("",
                   "expected an object with \"version\" and \"rules\", got " + jsonTypeWords(root));
    for (const auto &[key, value] : root.items()) {
      (void)value;
      if (!known(kTopFields, key))
        return error(jsonPointerChild("", key),
                     "unknown field (known: " + joined(kTopFields) + ")");
    }
    RuleSet set;
    auto version = root.find("version");
    if (version == root.end())
      return error("", "missing \"version\" (this dumpsift reads version " +
                           std::to_string(kRulesVersion) + ")");
    if (jsonCount(*version) != std::optional<uint64_t>(kRulesVersion))
      return error("/version", "unsupported version " + version->dump() +
                                   " (this dumpsift reads version " +
                                   std::to_string(kRulesVersion) + ")");
    if (auto d = root.find("description"); d != root.end()) {
      if (!d->is_string())
        return error("/description", "expected a string, got " + jsonTypeWords(*d));
      set.description = d->get<std::string>();
    }
    if (auto a = root.find("allow_truncated_dump"); a != root.end()) {
      if (!a->is_boolean())
        return error("/allow_truncated_dump", "expected true or false, got " + jsonTypeWords(*a));
      set.allow_truncated_dump = a->get<bool>();
    }
    auto rules = root.find("rules");
    if (rules == root.end())
      return error("", "missing \"rules\" (a list of rules)");
    if (!rules->is_array())
      return error("/rules", "expected a list of rules, got " + jsonTypeWords(*rules));
    if (rules->empty())
      return error("/rules", "no rules: give at least one");

    std::map<std::string, std::string> names; // name -> pointer of the first rule with it
    for (size_t i = 0; i < rules->size(); ++i) {
      std::string pointer = jsonPointerChild("/rules", i);
      auto rule = parseRule((*rules)[i], pointer);
      if (!rule)
        return rule.takeError();
      auto [it, fresh] = names.emplace(rule->name, pointer);
      if (!fresh)
        return error(pointer + "/name",
                     "duplicate rule name '" + rule->name + "' (also " + it->second + ")");
      set.rules.push_back(std::move(*rule));
    }
    return set;
  }

private:
  std::map<std::string, size_t> lines_;

  template <size_t N> static bool known(const char *const (&list)[N], const std::string &key) {
    for (const char *k : list)
      if (key == k)
        return true;
    return false;
  }

  // "/rules/3/max_bytes (line 14): WHY", or without the line when it is unknown.
  llvm::Error error(const std::string &pointer, const std::string &why) const {
    std::string where = pointer.empty() ? "/" : pointer;
    auto it = pointer.empty() ? lines_.end() : lines_.find(pointer); // the root: no line
    if (it != lines_.end())
      where += " (line " + std::to_string(it->second) + ")";
    return createError(where + ": " + why);
  }

  // A byte size: a non-negative integer, or a string parseSize accepts ("10M", "64K", "0x1000").
  llvm::Expected<uint64_t> size(const Json &value, const std::string &pointer) const {
    if (std::optional<uint64_t> n = jsonCount(value))
      return *n;
    if (value.is_string()) {
      std::string text = value.get<std::string>();
      if (std::optional<uint64_t> n = parseSize(text))
        return *n;
      return error(pointer, "'" + text + "' is not a size (e.g. 131186, \"64K\", \"10M\", \"1G\")");
    }
    return error(pointer, "expected a size (a number of bytes, or a string like \"10M\"), got " +
                              jsonTypeWords(value));
  }

  // A count: a non-negative integer.
  llvm::Expected<uint64_t> count(const Json &value, const std::string &pointer) const {
    if (std::optional<uint64_t> n = jsonCount(value))
      return *n;
    return error(pointer, "expected a count (a non-negative integer), got " + jsonTypeWords(value));
  }

  llvm::Expected<std::string> string(const Json &value, const std::string &pointer) const {
    if (!value.is_string())
      return error(pointer, "expected a string, got " + jsonTypeWords(value));
    std::string s = value.get<std::string>();
    if (s.empty())
      return error(pointer, "must not be empty");
    return s;
  }

  // A flag that only makes sense as `true`.
  llvm::Error onlyTrue(const Json &value, const std::string &pointer) const {
    if (!value.is_boolean())
      return error(pointer, "expected true, got " + jsonTypeWords(value));
    if (!value.get<bool>())
      return error(pointer, "only true is meaningful here; remove the field instead");
    return llvm::Error::success();
  }

  llvm::Expected<Rule> parseRule(const Json &j, const std::string &pointer) const {
    if (!j.is_object())
      return error(pointer, "expected a rule (an object), got " + jsonTypeWords(j));
    Rule rule;
    rule.pointer = pointer;
    if (auto it = lines_.find(pointer); it != lines_.end())
      rule.line = it->second;
    for (const auto &[key, value] : j.items()) {
      (void)value;
      if (!known(kRuleFields, key))
        return error(jsonPointerChild(pointer, key),
                     "unknown field (known: " + joined(kRuleFields) + ")");
    }
    auto at = [&](const char *key) { return jsonPointerChild(pointer, key); };

    auto name = j.find("name");
    if (name == j.end())
      return error(pointer, "missing \"name\"");
    auto name_text = string(*name, at("name"));
    if (!name_text)
      return name_text.takeError();
    rule.name = *name_text;
    if (auto d = j.find("description"); d != j.end()) {
      if (!d->is_string())
        return error(at("description"), "expected a string, got " + jsonTypeWords(*d));
      rule.description = d->get<std::string>();
    }

    // What the rule measures.
    if (auto k = j.find("kind"); k != j.end()) {
      auto kind = string(*k, at("kind"));
      if (!kind)
        return kind.takeError();
      if (!parseKind(*kind)) {
        std::vector<std::string> names;
        for (ContentKind known_kind : allKinds())
          names.push_back(kindName(known_kind).str());
        return error(at("kind"), "unknown kind '" + *kind + "' (known: " + joined(names) + ")");
      }
      rule.kind = *kind;
    }
    if (auto s = j.find("state"); s != j.end()) {
      auto state = string(*s, at("state"));
      if (!state)
        return state.takeError();
      if (*state != "used" && *state != "free" && *state != "unknown")
        return error(at("state"), "unknown state '" + *state + "' (known: used, free, unknown)");
      rule.state = *state;
    }
    if (auto s = j.find("size"); s != j.end()) {
      if (j.contains("min_size") || j.contains("max_size"))
        return error(at("size"), "give either size (one exact size) or min_size/max_size");
      auto n = size(*s, at("size"));
      if (!n)
        return n.takeError();
      rule.min_size = rule.max_size = *n;
      rule.exact_size = true;
    }
    if (auto s = j.find("min_size"); s != j.end()) {
      auto n = size(*s, at("min_size"));
      if (!n)
        return n.takeError();
      rule.min_size = *n;
    }
    if (auto s = j.find("max_size"); s != j.end()) {
      auto n = size(*s, at("max_size"));
      if (!n)
        return n.takeError();
      rule.max_size = *n;
      if (rule.max_size < rule.min_size)
        return error(at("max_size"),
                     "smaller than min_size (" + groupedDigits(rule.min_size) + ")");
    }
    if (auto f = j.find("finding"); f != j.end()) {
      auto type = string(*f, at("finding"));
      if (!type)
        return type.takeError();
      rule.finding = *type;
    }
    if (auto a = j.find("all_buffers"); a != j.end()) {
      if (llvm::Error e = onlyTrue(*a, at("all_buffers")))
        return e;
      rule.all_buffers = true;
    }
    for (auto [key, flag] :
         {std::pair{"warnings", &rule.warnings}, std::pair{"dump_truncated", &rule.dump_truncated}})
      if (auto w = j.find(key); w != j.end()) {
        if (llvm::Error e = onlyTrue(*w, at(key)))
          return e;
        *flag = true;
      }
    const char *selector = nullptr; // the first buffer selector given
    for (const char *key : {"kind", "size", "min_size", "max_size", "state"})
      if (!selector && j.contains(key))
        selector = key;
    if (rule.finding && selector)
      return error(at("finding"), std::string("a finding rule measures findings, not buffers: "
                                              "remove \"") +
                                      selector + "\" or make it two rules");
    if (rule.all_buffers && (selector || rule.finding))
      return error(at("all_buffers"), std::string("all_buffers measures every buffer: remove \"") +
                                          (selector ? selector : "finding") +
                                          "\" or make it two rules");
    const char *whole_report = nullptr; // a measure of the report, not of buffers or findings
    for (const char *key : {"warnings", "dump_truncated"})
      if (j.contains(key)) {
        if (whole_report || selector || rule.finding || rule.all_buffers)
          return error(at(key), std::string(key) + " measures the report itself: remove \"" +
                                    (whole_report   ? whole_report
                                     : selector     ? selector
                                     : rule.finding ? "finding"
                                                    : "all_buffers") +
                                    "\" or make it two rules");
        whole_report = key;
      }
    if (!selector && !rule.finding && !rule.all_buffers && !whole_report)
      return error(pointer, "does not say what to measure: give kind, size, min_size, max_size "
                            "or state (buffers), finding (a finding type), all_buffers, "
                            "warnings, or dump_truncated");

    // The limits.
    if (auto m = j.find("max_bytes"); m != j.end()) {
      if (rule.warnings)
        return error(at("max_bytes"), "warnings have a count only: use max_count");
      auto n = size(*m, at("max_bytes"));
      if (!n)
        return n.takeError();
      rule.max_bytes = *n;
    }
    if (auto m = j.find("max_count"); m != j.end()) {
      auto n = count(*m, at("max_count"));
      if (!n)
        return n.takeError();
      rule.max_count = *n;
    }
    if (auto m = j.find("must_not_exist"); m != j.end()) {
      if (llvm::Error e = onlyTrue(*m, at("must_not_exist")))
        return e;
      if (rule.max_bytes || rule.max_count)
        return error(at("must_not_exist"), std::string("cannot be combined with ") +
                                               (rule.max_bytes ? "max_bytes" : "max_count") +
                                               " (must_not_exist already means a count of 0)");
      rule.must_not_exist = true;
    }
    if (!rule.max_bytes && !rule.max_count && !rule.must_not_exist)
      return error(pointer, "no limit: give max_bytes, max_count or must_not_exist");
    return rule;
  }
};

} // namespace

llvm::Expected<RuleSet> parseRules(llvm::StringRef text) {
  auto json = parseJsonText(text);
  if (!json)
    return json.takeError();
  return RulesParser(text).parse(*json);
}

} // namespace dumpsift
