#include "options.h"

#include "dumpsift/heap/walker.h"
#include "dumpsift/support/error.h"
#include "dumpsift/support/sizes.h"

#include <algorithm>

namespace dumpsift::tool {

CLI::Option_group *addAnalyzeOptions(CLI::App &command, AnalyzeArgs &args,
                                     const std::string &group_name) {
  CLI::Option_group *group =
      command.add_option_group(group_name, "How a dump is analyzed (docs/cli.md)");
  group
      ->add_option("--min-size", args.min_size,
                   "Smallest buffer to report, in bytes (64K, 1M accepted)")
      ->capture_default_str();
  group->add_option("--max-size", args.max_size, "Largest buffer to report");
  group->add_option("--kind", args.kinds, "Only buffers of this kind (repeatable)")
      ->allow_extra_args(false);
  group->add_option("--state", args.state, "used, free, unknown or all")->capture_default_str();
  group->add_option("--walker", args.walkers, "Only this heap walker (repeatable)")
      ->allow_extra_args(false);
  group->add_flag("--no-region-scan", args.no_region_scan,
                  "Do not scan memory that no heap walker claims");
  group->add_option("--threads", args.threads,
                    "Threads for walking heaps and sniffing (default: all cores)");
  group->add_flag("--full-hash", args.full_hash,
                  "Hash every byte of every buffer (default: sampled windows of large ones)");
  group->add_option("--group-by", args.group_by, "size, or size,kind (one row per size and kind)")
      ->capture_default_str();
  group
      ->add_option("--holders", args.holders,
                   "Who holds each buffer: none, direct (its references only) or chains (and "
                   "whether a root reaches it; docs/holders.md)")
      ->capture_default_str();
  group
      ->add_option("--module-path", args.module_paths,
                   "Directory searched first for the dumped modules' files, as a debugger's "
                   "sysroot (repeatable; a file is used only when its build ID matches)")
      ->allow_extra_args(false);
  group->add_flag("--no-module-files", args.no_module_files,
                  "Read no module file for names: the report then depends on the dump alone");
  return group;
}

bool anyGiven(const CLI::Option_group &group) {
  for (const CLI::Option *option : group.get_options())
    if (option->count() > 0)
      return true;
  return false;
}

std::vector<std::string> analyzeArguments(const AnalyzeArgs &args) {
  const AnalyzeArgs defaults;
  std::vector<std::string> out;
  auto option = [&](const char *name, const std::string &value) {
    out.push_back(name);
    out.push_back(value);
  };
  if (args.min_size != defaults.min_size)
    option("--min-size", args.min_size);
  if (args.max_size != defaults.max_size)
    option("--max-size", args.max_size);
  for (const std::string &kind : args.kinds)
    option("--kind", kind);
  if (args.state != defaults.state)
    option("--state", args.state);
  for (const std::string &walker : args.walkers)
    option("--walker", walker);
  if (args.no_region_scan)
    out.push_back("--no-region-scan");
  if (args.threads != defaults.threads)
    option("--threads", std::to_string(args.threads));
  if (args.full_hash)
    out.push_back("--full-hash");
  if (args.group_by != defaults.group_by)
    option("--group-by", args.group_by);
  return out;
}

llvm::Expected<AnalyzeOptions> resolveAnalyzeOptions(const AnalyzeArgs &args) {
  AnalyzeOptions options;
  std::optional<uint64_t> min = parseSize(args.min_size);
  if (!min)
    return createError("--min-size: '" + args.min_size + "' is not a size (e.g. 65536, 64K, 1M)");
  options.min_size = *min;
  if (!args.max_size.empty()) {
    std::optional<uint64_t> max = parseSize(args.max_size);
    if (!max)
      return createError("--max-size: '" + args.max_size + "' is not a size");
    options.max_size = *max;
  }
  for (const std::string &k : args.kinds) {
    std::optional<ContentKind> kind = parseKind(k);
    if (!kind) {
      std::string names;
      for (ContentKind known : allKinds())
        names += (names.empty() ? "" : ", ") + kindName(known).str();
      return createError("--kind: unknown kind '" + k + "' (known: " + names + ")");
    }
    options.kinds.push_back(*kind);
  }
  if (args.state == "used")
    options.state = AllocState::Used;
  else if (args.state == "free")
    options.state = AllocState::Free;
  else if (args.state == "unknown")
    options.state = AllocState::Unknown;
  else if (args.state != "all")
    return createError("--state: '" + args.state + "' is not one of used, free, unknown, all");
  for (const std::string &w : args.walkers) {
    if (!findHeapWalker(w)) {
      std::string names;
      for (const auto &known : heapWalkers())
        names += (names.empty() ? "" : ", ") + known->name().str();
      return createError("--walker: unknown walker '" + w + "' (known: " + names + ")");
    }
  }
  options.walkers = args.walkers;
  options.region_scan = !args.no_region_scan;
  options.threads = args.threads;
  options.full_hash = args.full_hash;
  if (args.group_by == "size,kind" || args.group_by == "kind")
    options.group_by = GroupBy::SizeKind;
  else if (args.group_by != "size")
    return createError("--group-by: '" + args.group_by + "' is not 'size' or 'size,kind'");
  std::optional<HoldersMode> holders = parseHoldersMode(args.holders);
  if (!holders)
    return createError("--holders: '" + args.holders + "' is not one of none, direct, chains");
  options.holders = *holders;
  options.module_paths = args.module_paths;
  options.module_files = !args.no_module_files;
  return options;
}

} // namespace dumpsift::tool
