// Reading a fleet's manifest (manifest.h). The manifest, the status files and the rows are the
// fleet's own small JSON files, read and written with LLVM's JSON (llvm/Support/JSON.h); reports
// are read only through the report layer's readReport.
#include "dumpsift/fleet/manifest.h"

#include "dumpsift/support/error.h"
#include "dumpsift/support/utf8.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <optional>

namespace dumpsift {

namespace {
constexpr size_t kMaxIdLength = 128;

/// The row on one line of the manifest; an error says what is wrong with it.
llvm::Expected<ManifestRow> parseRow(llvm::StringRef line) {
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(line);
  if (!value)
    return createError("not JSON: " + llvm::toString(value.takeError()));
  const llvm::json::Object *object = value->getAsObject();
  if (!object)
    return createError("not a JSON object");
  ManifestRow row;
  for (const auto &[key, member] : *object) {
    if (key == "id" || key == "dump") {
      auto text = member.getAsString();
      if (!text)
        return createError("\"" + key.str() + "\" is not a string");
      (key == "id" ? row.id : row.dump) = text->str();
    } else if (key == "labels") {
      const llvm::json::Object *labels = member.getAsObject();
      if (!labels)
        return createError("\"labels\" is not an object");
      for (const auto &[label, label_value] : *labels) {
        auto text = label_value.getAsString();
        if (!text)
          return createError("label \"" + label.str() + "\" is not a string");
        if (llvm::Error e = checkLabel(label, *text))
          return e;
        row.labels.emplace(label.str(), text->str());
      }
    } else {
      return createError("unknown field \"" + toValidUtf8(key) + "\" (known: id, dump, labels)");
    }
  }
  if (row.id.empty())
    return createError("no \"id\"");
  if (!isRowId(row.id))
    return createError("id \"" + toValidUtf8(row.id) + "\" is not 1 to " +
                       std::to_string(kMaxIdLength) +
                       " characters among A-Z a-z 0-9 _ . - (not '.' first): it names files");
  if (row.dump.empty())
    return createError("no \"dump\"");
  return row;
}
} // namespace

bool isRowId(llvm::StringRef id) {
  auto id_char = [](char c) { return llvm::isAlnum(c) || c == '_' || c == '.' || c == '-'; };
  return !id.empty() && id.size() <= kMaxIdLength && id.front() != '.' &&
         std::all_of(id.begin(), id.end(), id_char);
}

llvm::Expected<Manifest> readManifest(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return llvm::createFileError(path, llvm::errorCodeToError(buffer.getError()));
  Manifest manifest;
  manifest.path = path;
  manifest.text = (*buffer)->getBuffer().str();
  const llvm::StringRef base = llvm::sys::path::parent_path(path);
  llvm::StringSet<> ids;
  llvm::StringRef rest = manifest.text;
  for (size_t line_number = 1; !rest.empty(); ++line_number) {
    auto [line, after] = rest.split('\n');
    rest = after;
    auto lineError = [&](llvm::Error e) {
      return llvm::createFileError(path, createError("line " + std::to_string(line_number) + ": " +
                                                     llvm::toString(std::move(e))));
    };
    llvm::Expected<ManifestRow> row = parseRow(line.rtrim('\r'));
    if (!row)
      return lineError(row.takeError());
    if (!ids.insert(row->id).second)
      return lineError(createError("id \"" + row->id + "\" is on an earlier line too"));
    row->index = line_number - 1;
    llvm::SmallString<256> dump_path(row->dump);
    if (llvm::sys::path::is_relative(dump_path)) {
      dump_path = base;
      llvm::sys::path::append(dump_path, row->dump);
      llvm::sys::fs::make_absolute(dump_path);
      llvm::sys::path::remove_dots(dump_path, /*remove_dot_dot=*/true);
    }
    row->dump_path = dump_path.str().str();
    manifest.rows.push_back(std::move(*row));
  }
  if (manifest.rows.empty())
    return llvm::createFileError(path, createError("no rows"));
  return manifest;
}

} // namespace dumpsift
