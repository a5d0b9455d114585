// How an HTML page links a file or directory beside it: the per-dump page links the files of an
// extraction, the fleet page each dump's own page.
#pragma once

#include <string>

namespace dumpsift {

/// The href by which a page written at `page` links `target` (a file or directory; both paths as
/// given): relative to the page's directory when `target` lies under it, else absolute;
/// percent-encoded (every byte but unreserved characters and '/').
std::string linkFromPage(const std::string &page, const std::string &target);

} // namespace dumpsift
