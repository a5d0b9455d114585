// The analysis options a report records, both ways: the `options` object writeReportJson writes
// (optionsJson) and the AnalyzeOptions recordedOptions reads back from it (saved_report.h). They
// stay side by side, each member's writing beside its reading; tests/report/saved_report_test.cpp
// writes every field of AnalyzeOptions and reads it back.
#include "dumpsift/report/saved_report.h"
#include "dumpsift/support/error.h"
#include "json_text.h"
#include "json_values.h"

namespace dumpsift {

using namespace detail;

namespace {

/// `group_by` as the report writes it.
const char *groupByName(GroupBy group_by) {
  return group_by == GroupBy::Size ? "size" : "size,kind";
}

} // namespace

Json detail::optionsJson(const AnalyzeOptions &o) {
  Json j;
  j["min_size"] = o.min_size;
  j["max_size"] = o.max_size == UINT64_MAX ? Json(nullptr) : Json(o.max_size);
  Json kinds = Json::array();
  for (ContentKind k : o.kinds)
    kinds.push_back(kindName(k).str());
  j["kinds"] = std::move(kinds);
  j["state"] = o.state ? Json(stateName(*o.state).str()) : Json(nullptr);
  j["walkers"] = o.walkers;
  j["region_scan"] = o.region_scan;
  if (o.full_hash)
    j["full_hash"] = true;
  j["group_by"] = groupByName(o.group_by);
  j["holders"] = holdersModeName(o.holders).str();
  if (!o.module_files)
    j["module_files"] = false;
  return j;
}

llvm::Expected<AnalyzeOptions> recordedOptions(const SavedReport &report) {
  if (!report.figures.options)
    return createError("/options: missing (the report records no analysis options)");
  AnalyzeOptions o;
  o.holders = HoldersMode::None; // a report that records no mode was made before the pass existed
  bool has_min_size = false;
  for (const auto &[key, text] : *report.figures.options) {
    // readReport kept each member as the compact JSON of a value it parsed: it parses again.
    const Json value = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    const std::string where = jsonPointerChild("/options", key);
    auto expected = [&](const std::string &what) {
      return createError(where + ": expected " + what + ", got " + jsonTypeWords(value));
    };
    if (key == "min_size") {
      std::optional<uint64_t> n = jsonCount(value);
      if (!n)
        return expected("a size in bytes");
      o.min_size = *n;
      has_min_size = true;
    } else if (key == "max_size") {
      std::optional<uint64_t> n = jsonCount(value);
      if (!n && !value.is_null())
        return expected("a size in bytes or null");
      o.max_size = n ? *n : UINT64_MAX;
    } else if (key == "kinds") {
      if (!value.is_array())
        return expected("a list of kinds");
      for (size_t i = 0; i < value.size(); ++i) {
        std::optional<ContentKind> kind =
            value[i].is_string() ? parseKind(value[i].get<std::string>()) : std::nullopt;
        if (!kind)
          return createError(jsonPointerChild(where, i) + ": not a kind this dumpsift knows");
        o.kinds.push_back(*kind);
      }
    } else if (key == "state") {
      o.state.reset();
      for (AllocState state : {AllocState::Used, AllocState::Free, AllocState::Unknown})
        if (value.is_string() && value.get<std::string>() == stateName(state))
          o.state = state;
      if (!o.state && !value.is_null())
        return createError(where + ": expected used, free, unknown or null");
    } else if (key == "walkers") {
      if (!value.is_array())
        return expected("a list of walker names");
      for (size_t i = 0; i < value.size(); ++i) {
        if (!value[i].is_string())
          return createError(jsonPointerChild(where, i) + ": expected a walker name, got " +
                             jsonTypeWords(value[i]));
        o.walkers.push_back(value[i].get<std::string>());
      }
    } else if (key == "module_files") {
      if (!value.is_boolean())
        return expected("true or false");
      o.module_files = value.get<bool>();
    } else if (key == "region_scan" || key == "full_hash") {
      if (!value.is_boolean())
        return expected("true or false");
      (key == "region_scan" ? o.region_scan : o.full_hash) = value.get<bool>();
    } else if (key == "group_by") {
      if (value == groupByName(GroupBy::Size))
        o.group_by = GroupBy::Size;
      else if (value == groupByName(GroupBy::SizeKind))
        o.group_by = GroupBy::SizeKind;
      else
        return createError(where + ": expected \"" + groupByName(GroupBy::Size) + "\" or \"" +
                           groupByName(GroupBy::SizeKind) + "\"");
    } else if (key == "holders") {
      std::optional<HoldersMode> mode =
          value.is_string() ? parseHoldersMode(value.get<std::string>()) : std::nullopt;
      if (!mode)
        return createError(where + ": expected \"none\", \"direct\" or \"chains\"");
      o.holders = *mode;
    }
    // Any other member is an option of another version of dumpsift: not one of this one's.
  }
  if (!has_min_size)
    return createError("/options/min_size: missing");
  return o;
}

} // namespace dumpsift
