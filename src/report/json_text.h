// Reading JSON text in the report layer (saved reports and rules files): nlohmann's parser, with
// errors that give the line and column, JSON pointers for messages, and the line of every value.
// Internal to src/report and its tests; nothing outside the layer sees nlohmann.
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

namespace dumpsift::detail {

using Json = nlohmann::ordered_json;

/// Parses JSON text. A syntax error reads "line L, column C: WHY" (1-based, the column counted in
/// bytes). Duplicate object keys are not detected (the last one wins).
llvm::Expected<Json> parseJsonText(llvm::StringRef text);

/// 1-based line and column of the byte at `offset` in `text` (an offset past the end counts as
/// the end).
std::pair<size_t, size_t> lineAndColumn(llvm::StringRef text, size_t offset);

/// `pointer` extended by one object key (escaped as RFC 6901 says: ~ as ~0, / as ~1) or by one
/// array index: ("/rules", 3) -> "/rules/3".
std::string jsonPointerChild(const std::string &pointer, llvm::StringRef key);
std::string jsonPointerChild(const std::string &pointer, size_t index);

/// Line of the value (or, for an object member, of its key) at each JSON pointer of `text`
/// ("" is the root; the first of duplicate keys). `text` must be valid JSON (parse it first); on
/// anything else the result is incomplete but the call is safe.
std::map<std::string, size_t> jsonPointerLines(llvm::StringRef text);

/// A non-negative integer, however nlohmann stores it (a report built in memory holds signed
/// integers, a parsed one unsigned); nullopt for anything else.
std::optional<uint64_t> jsonCount(const Json &value);

/// A JSON value's type in words, for "expected X, got Y" messages: "a string", "a negative
/// number", "an object", "null".
std::string jsonTypeWords(const Json &value);

} // namespace dumpsift::detail
