// The HTML report (`analyze --html`) loaded in a real browser: headless Chromium, driven through
// the DevTools protocol by tests/html/browser_check.py, shows what the dumped programs held.
#include "browser.h"
#include "support/test_support.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <set>

using namespace dumpsift::test;

TEST_CASE("the story core's page in Chromium shows its groups, a thumbnail for each image "
          "group, the histogram, and makes no request",
          "[browser]") {
  if (!chromiumOrSkipped())
    return;
  const std::string dir = scratchDir("html_story");
  const std::string core = unpackedFixture("cores/story.core.xz");
  CommandResult r = runTool(dir, "analyze '" + core + "' --html story.html --report story.json");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("HTML report: story.html") != std::string::npos);
  const nlohmann::json report = nlohmann::json::parse(readText(dir + "/story.json"));
  const nlohmann::json seen = loadInBrowser(dir, dir + "/story.html", dir + "/story.png");
  requireQuietPage(seen, dir + "/story.html");
  const nlohmann::json &facts = seen["facts"];
  INFO(facts.dump(2));

  // One row and one histogram bar per size group; the script sorts and filters.
  const size_t groups = report["groups"].size();
  REQUIRE(groups == 8);
  CHECK(facts["group_rows"] == groups);
  CHECK(facts["group_sections"] == groups);
  CHECK(facts["histogram_bars"] == groups);
  CHECK(facts["findings"] == report["findings"].size());
  CHECK(facts["scripts"] == 1);
  CHECK(facts["sorted_by_count"] == true);
  CHECK(facts["filter_shown"] == true);

  // Ground truth: what the story program said it held (fixtures/cores/story.manifest.jsonl).
  // Every buffer holding an image, or an aws-chunked frame carrying JPEG data, has a thumbnail
  // the browser decoded, or links to the identical buffer that has one.
  std::map<std::string, uint64_t> image_buffers; // address -> usable size
  for (const nlohmann::json &held :
       readJsonLines(sourceDir() + "/fixtures/cores/story.manifest.jsonl"))
    if (held["kind"] == "jpeg" || held["kind"] == "png" ||
        (held["kind"] == "aws-chunked" && held.value("payload_kind", "") == "jpeg"))
      image_buffers[held["address"].get<std::string>()] = held["usable_size"].get<uint64_t>();
  REQUIRE(image_buffers.size() == 15);
  std::set<std::string> shown;
  std::set<uint64_t> groups_with_thumbnail;
  for (const nlohmann::json &img : facts["images"]) {
    const std::string address = img["buffer"].get<std::string>().substr(2); // "b-0x..."
    INFO(address);
    REQUIRE(image_buffers.count(address));
    CHECK(img["natural_width"].get<int>() > 0);
    CHECK(img["natural_width"].get<int>() <= 160);
    CHECK(img["group_size"] == image_buffers[address]);
    shown.insert(address);
    groups_with_thumbnail.insert(img["group_size"].get<uint64_t>());
  }
  for (const nlohmann::json &row : facts["copy_links"]) {
    const std::string address = row.get<std::string>().substr(2);
    CHECK(image_buffers.count(address));
    shown.insert(address);
  }
  CHECK(shown.size() == image_buffers.size());
  // The image groups: the JPEG slices of 131,080 and 135,152 bytes and the PNG's 360,432.
  CHECK(groups_with_thumbnail == std::set<uint64_t>{131080, 135152, 360432});

  // Who holds them: each group's sentence is the report's, each listed buffer's starts with its
  // verdict (docs/holders.md).
  std::map<uint64_t, std::string> group_sentences; // by size
  for (const nlohmann::json &g : report["groups"])
    group_sentences[g["size"].get<uint64_t>()] = g["holders"]["summary"].get<std::string>();
  REQUIRE(facts["group_holders"].size() == groups);
  for (const nlohmann::json &p : facts["group_holders"])
    CHECK(p["text"].get<std::string>() ==
          "held: " + group_sentences[p["group_size"].get<uint64_t>()]);
  std::map<std::string, std::string> verdicts; // "b-0x..." -> verdict
  for (const nlohmann::json &b : report["buffers"])
    verdicts["b-" + b["address"].get<std::string>()] = b["verdict"].get<std::string>();
  REQUIRE(facts["buffer_holders"].size() >= groups);
  for (const nlohmann::json &cell : facts["buffer_holders"]) {
    const std::string text = cell["text"].get<std::string>();
    INFO(cell.dump());
    REQUIRE(verdicts.count(cell["buffer"].get<std::string>()));
    CHECK(text.rfind(verdicts[cell["buffer"].get<std::string>()], 0) == 0);
    if (text.rfind("anchored", 0) == 0)
      CHECK(text.find("held by global `story+0x") != std::string::npos);
  }

  // The screenshot is a PNG of the page.
  const std::vector<uint8_t> png = readFileBytes(dir + "/story.png");
  REQUIRE(png.size() > 20000);
  CHECK(std::string(png.begin() + 1, png.begin() + 4) == "PNG");
}

TEST_CASE("the same dump gives the same page, byte for byte") {
  const std::string dir = scratchDir("html_deterministic");
  const std::string core = unpackedFixture("cores/story.core.xz");
  REQUIRE(runTool(dir, "analyze '" + core + "' --html a.html --threads 1 -q").exit_code == 0);
  REQUIRE(runTool(dir, "analyze '" + core + "' --html b.html --threads 2 -q").exit_code == 0);
  CHECK(readText(dir + "/a.html") == readText(dir + "/b.html"));
}

TEST_CASE("markup and quotes in a dump's names, command line, buffers and details are "
          "escaped: the page runs its own script only",
          "[browser]") {
  if (!gcoreOrSkipped() || !chromiumOrSkipped())
    return;
  const std::string dir = scratchDir("html_hostile");
  // The program runs from a file whose name is markup.
  const std::string program = dir + "/<i>\"'&";
  REQUIRE(runCommand("cp '" + fixtureProgram("hostile_html") + "' '" + dir + "/<i>\"'\"'\"'&'")
              .exit_code == 0);
  LiveProcess live(program);
  REQUIRE(live.manifest().size() == 3);
  live.gcore(dir + "/hostile.core");
  CommandResult r = runTool(dir, "analyze hostile.core --html hostile.html --report hostile.json");
  REQUIRE(r.exit_code == 0);
  const std::string html = readText(dir + "/hostile.html");

  // What the dump holds reached the page, escaped: the process name and path, the text's and
  // the request's first bytes, the request's target and host.
  CHECK(html.find("(&lt;i&gt;&quot;&#39;&amp;)") != std::string::npos);
  CHECK(html.find("command line: " + dir + "/&lt;i&gt;&quot;&#39;&amp;</p>") != std::string::npos);
  CHECK(html.find("&lt;script&gt;alert(&quot;d") != std::string::npos); // 16 bytes a line
  CHECK(html.find("target=/upload/&lt;script&gt;alert(2)&lt;/script&gt;?q=&quot;x&quot;") !=
        std::string::npos);
  CHECK(html.find("host=&lt;img src=x onerror=alert(3)&gt;") != std::string::npos);
  // And nothing of it as markup: one <script> (the page's own), no <img but the thumbnails.
  size_t scripts = 0;
  for (size_t at = html.find("<script"); at != std::string::npos; at = html.find("<script", at + 1))
    ++scripts;
  CHECK(scripts == 1);
  for (size_t at = html.find("<img"); at != std::string::npos; at = html.find("<img", at + 1))
    CHECK(html.compare(at, 18, "<img class=\"thumb\"") == 0);
  CHECK(html.find("alert(\"dump\")") == std::string::npos);

  // Every held buffer is listed (by its address), and the browser runs nothing but the page.
  for (const nlohmann::json &held : live.manifest())
    CHECK(html.find("id=\"b-" + held["address"].get<std::string>() + "\"") != std::string::npos);
  const nlohmann::json seen = loadInBrowser(dir, dir + "/hostile.html", dir + "/hostile.png");
  requireQuietPage(seen, dir + "/hostile.html");
  CHECK(seen["facts"]["scripts"] == 1);
  CHECK(seen["facts"]["images"].empty());
}

TEST_CASE("`dumpsift html REPORT DUMP` writes the page analyze --html wrote, byte for byte") {
  const std::string dir = scratchDir("html_command");
  const std::string core = unpackedFixture("cores/story.core.xz");
  REQUIRE(
      runTool(dir, "analyze '" + core + "' --report r.json --html b.html --html-thumbnails 3 -q")
          .exit_code == 0);
  CommandResult r = runTool(dir, "html r.json '" + core + "' -o a.html --html-thumbnails 3");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "HTML report: a.html\n");
  CHECK(readText(dir + "/a.html") == readText(dir + "/b.html"));
}

TEST_CASE("`dumpsift html` renders a report made with every analysis option, --full-hash too") {
  // Each option as analyze writes it into the report's `options`, which `html` must read back
  // whole: a forgotten one (full_hash was) gives another analysis and a refused report.
  const std::string dir = scratchDir("html_command_options");
  const std::string core = unpackedFixture("cores/story.core.xz");
  for (const std::string options :
       {"--full-hash", "--min-size 100K --max-size 300K --state used --group-by size,kind",
        "--kind jpeg --kind zero --walker glibc --no-region-scan --full-hash"}) {
    INFO(options);
    REQUIRE(runTool(dir, "analyze '" + core + "' " + options +
                             " --report r.json --html b.html --html-thumbnails 3 -q")
                .exit_code == 0);
    CommandResult r = runTool(dir, "html r.json '" + core + "' -o a.html --html-thumbnails 3 -q");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(readText(dir + "/a.html") == readText(dir + "/b.html"));
  }
}

TEST_CASE("`dumpsift html` refuses a report of another dump, or one whose options were edited") {
  const std::string dir = scratchDir("html_command_mismatch");
  const std::string core = unpackedFixture("cores/story.core.xz");
  const std::string other = unpackedFixture("cores/hold_buffers.core.xz");
  REQUIRE(runTool(dir, "analyze '" + core + "' --report story.json -q").exit_code == 0);

  // Another core: its size and name are not the report's.
  CommandResult r = runTool(dir, "html story.json '" + other + "' -o a.html");
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("dumpsift: error: 'story.json': it was not made from '" + other + "'", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);

  // The options edited: the analysis gives other buffers.
  nlohmann::json report = nlohmann::json::parse(readText(dir + "/story.json"));
  report["options"]["min_size"] = 1 << 20;
  std::ofstream(dir + "/edited.json") << report.dump();
  r = runTool(dir, "html edited.json '" + core + "' -o a.html");
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("dumpsift: error: 'edited.json': it was not made from '" + core +
                        "' by this version of dumpsift with the options it records",
                    0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);

  // Neither refusal wrote a page; a missing report, a dump as the report, an unwritable page fail.
  CHECK(access((dir + "/a.html").c_str(), F_OK) != 0);
  r = runTool(dir, "html missing.json '" + core + "' -o a.html");
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("dumpsift: error: 'missing.json': ", 0) == 0);
  r = runTool(dir, "html '" + core + "' '" + core + "' -o a.html");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "dumpsift: error: '" + core + "': not a JSON report (a JSON object)\n");
  r = runTool(dir, "html story.json '" + core + "' -o no/such/dir/a.html");
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("dumpsift: error: 'no/such/dir/a.html': ", 0) == 0);
}
