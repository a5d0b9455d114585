// A rules file of `dumpsift check` read (docs/ci.md): its JSON text into the rules the compare
// layer checks a report against (dumpsift/compare/rules.h). Read here, with saved reports, where
// the JSON is.
#pragma once

#include "dumpsift/compare/rules.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace dumpsift {

/// Parses a rules file's text. Errors say where: "line L, column C: WHY" for JSON syntax, else
/// "/rules/3/max_bytes (line 14): WHY" (the field's JSON pointer and its line). Unknown fields,
/// unknown kinds and states, contradictory selections and rules without a limit are errors.
/// Finding types are not checked against a list (new ones appear as dumpsift grows).
llvm::Expected<RuleSet> parseRules(llvm::StringRef text);

} // namespace dumpsift
