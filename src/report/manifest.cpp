// The extraction's manifest and the report's `extracted` section (manifest.h).
#include "dumpsift/report/manifest.h"

#include "dumpsift/support/hex.h"
#include "json_values.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

namespace dumpsift {

using namespace detail;

Json detail::extractedFileJson(const ExtractedFile &file, llvm::StringRef path) {
  Json j;
  j["path"] = path.str();
  j["role"] = roleName(file.role).str();
  if (file.role == ExtractRole::Body)
    j["body"] = file.body;
  j["address"] = hexAddress(file.address);
  j["state"] = stateName(file.state).str();
  j["offset"] = file.offset;
  j["size"] = file.size;
  j["kind"] = kindName(file.kind).str();
  j["truncated"] = file.truncated;
  if (file.role != ExtractRole::Buffer)
    j["pieces"] = file.pieces;
  j["details"] = detailsJson(file.details);
  j["sha256"] = file.sha256.empty() ? Json(nullptr) : Json(file.sha256);
  if (!file.addresses.empty()) {
    Json addresses = Json::array();
    for (uint64_t address : file.addresses)
      addresses.push_back(hexAddress(address));
    j["addresses"] = std::move(addresses);
  }
  return j;
}

Json detail::extractedJson(const Extraction &extraction) {
  Json files = Json::array();
  for (const ExtractedFile &file : extraction.files) {
    llvm::SmallString<256> path(extraction.dir);
    llvm::sys::path::append(path, file.name);
    files.push_back(extractedFileJson(file, path));
  }
  return files;
}

void writeManifestLine(const ExtractedFile &file, llvm::StringRef path, llvm::raw_ostream &out) {
  // A path that is not UTF-8 must not make the line unwritable: dumpJson replaces such bytes.
  out << dumpJson(extractedFileJson(file, path), -1) << '\n';
}

void writeManifest(const Extraction &extraction, llvm::raw_ostream &out) {
  for (const ExtractedFile &file : extraction.files)
    writeManifestLine(file, file.name, out);
}

} // namespace dumpsift
