// report.html: one self-contained page for a reports directory: the summary, the per-function
// table (sortable), the flame graph of trace.folded, the threads with their functions, and the
// top heap sites with a flame graph of their bytes when heap.json is there.
#include "markup.hpp"
#include "report.hpp"

#include "agent_client.hpp"
#include "export/common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>

namespace hotscope::cli::report {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using exporters::detail::human_bytes;
using exporters::detail::human_duration;

constexpr std::size_t kTopSites = 25;

std::uint64_t u64(const Json& object, const char* key) {
  const auto found = object.find(key);
  return found != object.end() && found->is_number() ? found->get<std::uint64_t>() : 0;
}

double f64(const Json& object, const char* key) {
  const auto found = object.find(key);
  return found != object.end() && found->is_number() ? found->get<double>() : 0;
}

std::string text_of(const Json& object, const char* key) {
  const auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : "";
}

// A sortable cell: shown as `shown`, sorted by `value`.
std::string cell(double value, const std::string& shown) {
  return fmt::format("<td data-value=\"{}\">{}</td>", value, escape(shown));
}
std::string time_cell(double ns) {
  return cell(ns, human_duration(ns));
}
std::string bytes_cell(std::uint64_t bytes) {
  return cell(static_cast<double>(bytes), human_bytes(bytes));
}
std::string count_cell(std::uint64_t count) {
  return cell(static_cast<double>(count), std::to_string(count));
}
// Where a figure is not known: `-`, never 0, sorted with the smallest.
std::string unknown_cell() {
  return cell(-1, "-");
}

std::string heading_row(const std::vector<std::string>& headings) {
  std::string row = "<tr>";
  for (std::size_t i = 0; i < headings.size(); ++i) {
    row += fmt::format("<th data-sort=\"{}\">{}</th>", i == 0 ? "text" : "number",
                       escape(headings[i]));
  }
  return row + "</tr>";
}

// A table of functions as stats.json lists them (by total time).
std::string functions_table(const Json& functions, double duration_ns, bool allocations,
                            const std::string& id) {
  std::vector<std::string> headings{"Function", "Calls", "Mean",  "P50",    "P95",
                                    "P99",      "Self",  "Total", "% Total"};
  if (allocations) {
    headings.insert(headings.end(), {"Alloc Self", "Alloc Total", "Blocks Total"});
  }
  std::string html = fmt::format("<table class=\"sortable functions\" id=\"{}\"><thead>{}</thead>"
                                 "<tbody>\n",
                                 id, heading_row(headings));
  for (const Json& function : functions) {
    const std::string name = text_of(function, "name");
    const bool timed = u64(function, "calls") > 0;
    // A function whose only call is still open has no time yet (formats-output.md).
    const auto timing = [&](const char* key) {
      return timed ? time_cell(f64(function, key)) : unknown_cell();
    };
    const double total = f64(function, "total_ns");
    html += fmt::format("<tr><td data-value=\"{}\">{} <span class=\"location\">{}:{}</span></td>",
                        escape(name), escape(name), escape(text_of(function, "file")),
                        u64(function, "line"));
    html += count_cell(u64(function, "calls")) + timing("mean_ns") + timing("p50_ns") +
            timing("p95_ns") + timing("p99_ns") + timing("self_ns") + timing("total_ns");
    const double share = duration_ns > 0 ? 100 * total / duration_ns : 0;
    html += timed ? cell(share, fmt::format("{:.2f}%", share)) : unknown_cell();
    if (allocations) {
      html += bytes_cell(u64(function, "alloc_bytes_self")) +
              bytes_cell(u64(function, "alloc_bytes_total")) +
              count_cell(u64(function, "alloc_blocks_total"));
    }
    html += "</tr>\n";
  }
  return html + "</tbody></table>\n";
}

std::string thread_label(const Json& thread) {
  const std::string name = text_of(thread, "name");
  return name.empty() ? fmt::format("thread {}", u64(thread, "os_tid")) : name;
}

std::string threads_section(const Json& stats, double duration_ns, bool allocations) {
  const Json threads = stats.value("threads", Json::array());
  std::string html = "<section id=\"threads\"><h2>Threads</h2>\n";
  html += fmt::format("<table class=\"sortable\" id=\"threads-table\"><thead>{}</thead><tbody>\n",
                      heading_row({"Thread", "TID", "CPU User", "CPU System", "Voluntary Sw",
                                   "Involuntary Sw", "Records", "Dropped"}));
  for (const Json& thread : threads) {
    const Json records = thread.value("records", Json::object());
    html += fmt::format("<tr><td data-value=\"{0}\">{0}{1}</td>", escape(thread_label(thread)),
                        thread.value("exited", false) ? " (exited)" : "");
    // An empty state: no OS figures were read for it (a guest's track), its zeros are unknowns.
    const bool os_known = !thread.contains("state") || !text_of(thread, "state").empty();
    const auto os_time = [&](const char* key) {
      return os_known && thread.contains(key) ? time_cell(f64(thread, key)) : unknown_cell();
    };
    const auto os_count = [&](const char* key) {
      return os_known && thread.contains(key) ? count_cell(u64(thread, key)) : unknown_cell();
    };
    html += count_cell(u64(thread, "os_tid")) + os_time("cpu_user_ns") + os_time("cpu_system_ns") +
            os_count("voluntary_switches") + os_count("involuntary_switches") +
            count_cell(u64(records, "written")) + count_cell(u64(records, "dropped")) + "</tr>\n";
  }
  html += "</tbody></table>\n";
  for (const Json& thread : threads) {
    const Json records = thread.value("records", Json::object());
    html += fmt::format("<h3>{} (tid {})</h3>\n<p class=\"summary\">records: written={} kept={} "
                        "dropped={}</p>\n",
                        escape(thread_label(thread)), u64(thread, "os_tid"),
                        u64(records, "written"), u64(records, "kept"), u64(records, "dropped"));
    html += functions_table(thread.value("functions", Json::array()), duration_ns, allocations,
                            fmt::format("thread-{}", u64(thread, "index")));
  }
  return html + "</section>\n";
}

std::string flame_section(const std::optional<std::string>& folded, const std::string& source) {
  std::string html = "<section id=\"flame\"><h2>Flame graph</h2>\n";
  if (!folded) {
    return html + "<p class=\"note\">No trace.folded in this directory (a process run with "
                  "HOTSCOPE_TRACE_MIB=0 keeps no trace).</p></section>\n";
  }
  const profiles::StackLines stacks = profiles::folded_stacks(*folded, source);
  if (stacks.starts.empty()) {
    return html + "<p class=\"note\">trace.folded holds no stack: no scope ran in the trace "
                  "window.</p></section>\n";
  }
  html += "<p class=\"note\">Self time by stack in the trace window (trace.folded): process, "
          "thread, then scopes. Click a frame to zoom, Search to highlight frames by name; hover "
          "for time and share.</p>\n";
  return html +
         flame_svg(flame_graph(stacks),
                   {"Time by stack", "trace.folded", FlameUnit::Nanoseconds, false}) +
         "</section>\n";
}

std::string heap_section(const profiles::Profile& heap) {
  std::vector<profiles::Site> sites = profiles::heap_sites(heap);
  std::uint64_t sums[6] = {};
  for (const profiles::Site& site : sites) {
    const std::uint64_t figures[6] = {site.total_bytes, site.total_blocks, site.gmax_bytes,
                                      site.gmax_blocks, site.end_bytes,    site.end_blocks};
    for (std::size_t i = 0; i < 6; ++i) {
      sums[i] += figures[i];
    }
  }
  std::string html = "<section id=\"heap\"><h2>Heap: top allocation sites</h2>\n";
  html += fmt::format("<p class=\"summary\">Total: {} in {} blocks; at t-gmax: {} in {} blocks; "
                      "at t-end: {} in {} blocks ({} sites, heap.json)</p>\n",
                      human_bytes(sums[0]), sums[1], human_bytes(sums[2]), sums[3],
                      human_bytes(sums[4]), sums[5], sites.size());
  std::sort(sites.begin(), sites.end(), [](const profiles::Site& a, const profiles::Site& b) {
    return a.total_bytes > b.total_bytes;
  });
  html += fmt::format(
      "<table class=\"sortable\" id=\"heap-table\"><thead>{}</thead><tbody>\n",
      heading_row({"Site", "Total", "Blocks", "At t-gmax", "Blocks", "At t-end", "Blocks"}));
  for (std::size_t i = 0; i < std::min(sites.size(), kTopSites); ++i) {
    const profiles::Site& site = sites[i];
    std::string stack;
    for (const std::string* frame : site.frames) {
      stack += (stack.empty() ? "" : "\n") + profiles::short_frame(*frame);
    }
    const std::string name = profiles::site_name(site);
    html += fmt::format("<tr><td data-value=\"{0}\"><details><summary>{0}</summary><div "
                        "class=\"stack\">{1}</div></details></td>",
                        escape(name), escape(stack));
    html += bytes_cell(site.total_bytes) + count_cell(site.total_blocks) +
            bytes_cell(site.gmax_bytes) + count_cell(site.gmax_blocks) +
            bytes_cell(site.end_bytes) + count_cell(site.end_blocks) + "</tr>\n";
  }
  html += "</tbody></table>\n";
  if (sites.size() > kTopSites) {
    html += fmt::format("<p class=\"note\">The {} sites that allocated most of {}; the flame "
                        "graph below has them all.</p>\n",
                        kTopSites, sites.size());
  }
  const std::string text = heap_stacks(sites, HeapBytes::Total);
  const profiles::StackLines stacks = profiles::folded_stacks(text, heap.source, kHeapSeparator);
  if (!stacks.starts.empty()) {
    html += flame_svg(flame_graph(stacks), {"Bytes allocated by stack", "heap.json: total bytes",
                                            FlameUnit::Bytes, false});
  }
  return html + "</section>\n";
}

std::string header(const Json& stats) {
  const std::string process =
      fmt::format("{} (pid {})", text_of(stats, "process_name"), u64(stats, "pid"));
  const Json clock = stats.value("clock", Json::object());
  const Json records = stats.value("records", Json::object());
  std::string html = fmt::format(
      "<h1>hotscope report: {}</h1>\n<p class=\"summary\">duration {}; clock {}, {:.3f} GHz "
      "({}); hotscope {}</p>\n<p class=\"summary\">records: written={} kept={} dropped={}</p>\n",
      escape(process), human_duration(f64(stats, "duration_ns")), escape(text_of(clock, "source")),
      f64(clock, "ticks_per_second") / 1e9, escape(text_of(clock, "frequency_origin")),
      escape(text_of(stats, "hotscope_version")), u64(records, "written"), u64(records, "kept"),
      u64(records, "dropped"));
  if (u64(records, "dropped") > 0) {
    html += fmt::format("<p class=\"warning\">{} records dropped (a thread's ring was full): the "
                        "figures miss those calls.</p>\n",
                        u64(records, "dropped"));
  }
  return html;
}

} // namespace

std::string html_report(const std::string& dir) {
  const fs::path root(dir);
  if (!fs::exists(root / "stats.json")) {
    throw Failure(kUsage, fmt::format("no stats.json in {}: give a directory hotscope wrote its "
                                      "reports into (HOTSCOPE_OUT)",
                                      dir));
  }
  const profiles::Profile stats = profiles::read_profile((root / "stats.json").string());
  std::optional<profiles::Profile> heap;
  if (fs::exists(root / "heap.json")) {
    heap = profiles::read_profile((root / "heap.json").string());
  }
  const fs::path folded = root / "trace.folded";
  return html_page(stats, heap,
                   fs::exists(folded) ? std::optional(profiles::read_text(folded.string()))
                                      : std::nullopt,
                   folded.string());
}

std::string html_page(const profiles::Profile& stats, const std::optional<profiles::Profile>& heap,
                      const std::optional<std::string>& folded, const std::string& folded_source) {
  if (stats.kind != profiles::Kind::Stats) {
    throw Failure(kUsage, fmt::format("{} is {}, not a stats.json", stats.source,
                                      profiles::kind_name(stats.kind)));
  }
  if (heap && heap->kind != profiles::Kind::Heap) {
    throw Failure(kUsage, fmt::format("{} is {}, not a heap profile", heap->source,
                                      profiles::kind_name(heap->kind)));
  }
  const Json& document = stats.document;
  const double duration_ns = f64(document, "duration_ns");
  const bool allocations = u64(document.value("allocations", Json::object()), "blocks") > 0;
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta "
      "charset=\"utf-8\">\n<link rel=\"icon\" href=\"data:,\">\n<title>hotscope report: {} (pid "
      "{})</title>\n<style>\n{}{}</style></head>\n<body>\n",
      escape(text_of(document, "process_name")), u64(document, "pid"), assets::kReportCss,
      assets::kFlameCss);
  html += header(document);
  html += "<nav><a href=\"#functions\">Functions</a><a href=\"#flame\">Flame graph</a><a "
          "href=\"#threads\">Threads</a>";
  html += heap ? "<a href=\"#heap\">Heap</a></nav>\n" : "</nav>\n";
  html += "<section id=\"functions\"><h2>Functions</h2>\n<p class=\"note\">Over all threads; "
          "% Total is total time over the duration. Click a heading to sort.</p>\n";
  html += functions_table(document.at("functions"), duration_ns, allocations, "functions-table");
  html += "</section>\n";
  html += flame_section(folded, folded_source);
  html += threads_section(document, duration_ns, allocations);
  if (heap) {
    html += heap_section(*heap);
  }
  html += fmt::format("<script>\n{}</script>\n<script>\n{}</script>\n</body></html>\n",
                      assets::kReportJs, assets::kFlameJs);
  return html;
}

} // namespace hotscope::cli::report
