// report.html: one self-contained page for a reports directory: the summary, the per-function
// table (sortable; CPU self and total when the run has CPU samples), the flame graphs of
// trace.folded and of cpu.folded when there, the threads with their functions, and the top heap
// sites with a flame graph of their bytes when heap.json is there, and the locks when the run
// has any.
#include "markup.hpp"
#include "report.hpp"

#include "agent_client.hpp"
#include "export/common.hpp"
#include "export/formats.hpp"
#include "locks_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>

namespace hotscope::cli::report {
namespace {

namespace fs = std::filesystem;
using exporters::Format;
using exporters::detail::human_bytes;
using exporters::detail::human_duration;

// The files of a reports directory the page is made of: named as hotscope writes them.
const char* file_of(Format format) {
  return exporters::format_info(format).file;
}

constexpr std::size_t kTopSites = 25;

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

// What the tables of functions show besides their timing.
struct Extras {
  bool allocations = false;
  bool cpu = false; // the run has CPU samples: CPU self and total are measured
};

// A table of functions as stats.json lists them (by total time).
std::string functions_table(const std::vector<profiles::FunctionStats>& functions,
                            double duration_ns, Extras extras, const std::string& id) {
  std::vector<std::string> headings{"Function", "Calls", "Mean",  "P50",    "P95",
                                    "P99",      "Self",  "Total", "% Total"};
  if (extras.cpu) {
    headings.insert(headings.end(), {"CPU Self", "CPU Total"});
  }
  if (extras.allocations) {
    headings.insert(headings.end(), {"Alloc Self", "Alloc Total", "Blocks Total"});
  }
  std::string html = fmt::format("<table class=\"sortable functions\" id=\"{}\"><thead>{}</thead>"
                                 "<tbody>\n",
                                 id, heading_row(headings));
  for (const profiles::FunctionStats& function : functions) {
    const bool timed = function.calls > 0;
    // A function whose only call is still open has no time yet (formats-output.md).
    const auto timing = [&](double ns) { return timed ? time_cell(ns) : unknown_cell(); };
    const auto total = static_cast<double>(function.total_ns);
    html += fmt::format("<tr><td data-value=\"{}\">{} <span class=\"location\">{}:{}</span></td>",
                        escape(function.name), escape(function.name), escape(function.file),
                        function.line);
    html += count_cell(function.calls) + timing(function.mean_ns) +
            timing(static_cast<double>(function.p50_ns)) +
            timing(static_cast<double>(function.p95_ns)) +
            timing(static_cast<double>(function.p99_ns)) +
            timing(static_cast<double>(function.self_ns)) + timing(total);
    const double share = duration_ns > 0 ? 100 * total / duration_ns : 0;
    html += timed ? cell(share, fmt::format("{:.2f}%", share)) : unknown_cell();
    if (extras.cpu) {
      html += time_cell(static_cast<double>(function.cpu_self_ns)) +
              time_cell(static_cast<double>(function.cpu_total_ns));
    }
    if (extras.allocations) {
      html += bytes_cell(function.alloc_bytes_self) + bytes_cell(function.alloc_bytes_total) +
              count_cell(function.alloc_blocks_total);
    }
    html += "</tr>\n";
  }
  return html + "</tbody></table>\n";
}

std::string thread_label(const profiles::ThreadStats& thread) {
  return thread.name.empty() ? fmt::format("thread {}", thread.os_tid) : thread.name;
}

std::string threads_section(const profiles::Stats& stats, double duration_ns, Extras extras) {
  std::string html = "<section id=\"threads\"><h2>Threads</h2>\n";
  std::vector<std::string> headings{"Thread",     "TID",          "CPU User",
                                    "CPU System", "Voluntary Sw", "Involuntary Sw",
                                    "Records",    "Dropped"};
  if (extras.cpu) {
    headings.emplace_back("CPU Samples");
  }
  html += fmt::format("<table class=\"sortable\" id=\"threads-table\"><thead>{}</thead><tbody>\n",
                      heading_row(headings));
  for (const profiles::ThreadStats& thread : stats.threads) {
    html += fmt::format("<tr><td data-value=\"{0}\">{0}{1}</td>", escape(thread_label(thread)),
                        thread.exited ? " (exited)" : "");
    // An empty state: no OS figures were read for it (a guest's track), its zeros are unknowns.
    const bool os_known = !thread.state || !thread.state->empty();
    const auto os_time = [&](const std::optional<std::uint64_t>& ns) {
      return os_known && ns ? time_cell(static_cast<double>(*ns)) : unknown_cell();
    };
    const auto os_count = [&](const std::optional<std::uint64_t>& count) {
      return os_known && count ? count_cell(*count) : unknown_cell();
    };
    html += count_cell(static_cast<std::uint64_t>(thread.os_tid)) + os_time(thread.cpu_user_ns) +
            os_time(thread.cpu_system_ns) + os_count(thread.voluntary_switches) +
            os_count(thread.involuntary_switches) + count_cell(thread.records.written) +
            count_cell(thread.records.dropped);
    if (extras.cpu) {
      html += thread.cpu_samples ? count_cell(*thread.cpu_samples) : unknown_cell();
    }
    html += "</tr>\n";
  }
  html += "</tbody></table>\n";
  for (const profiles::ThreadStats& thread : stats.threads) {
    const profiles::Records& records = thread.records;
    html += fmt::format("<h3>{} (tid {})</h3>\n<p class=\"summary\">records: written={} kept={} "
                        "dropped={}</p>\n",
                        escape(thread_label(thread)), thread.os_tid, records.written, records.kept,
                        records.dropped);
    html += functions_table(thread.functions, duration_ns, extras,
                            fmt::format("thread-{}", thread.index));
  }
  return html + "</section>\n";
}

// The locks (docs/locks.md): the deadlocks standing at exit, the locks' table (as `hotscope
// locks`), the lock-order inversions with both sites; nothing when the run has none.
std::string locks_section(const profiles::LockReport& report) {
  std::string html = "<section id=\"locks\"><h2>Locks</h2>\n";
  const auto lines = [](const std::vector<std::string>& text, const char* css) {
    std::string pre;
    for (const std::string& line : text) {
      pre += escape(line) + "\n";
    }
    return fmt::format("<pre class=\"{}\">{}</pre>\n", css, pre);
  };
  for (const profiles::Deadlock& deadlock : report.deadlocks) {
    html += lines(deadlock_lines(deadlock), "warning");
  }
  const std::vector<std::vector<std::string>> table =
      lock_table(report.locks.value_or(std::vector<profiles::LockStats>{}));
  html += fmt::format("<table class=\"sortable\" id=\"locks-table\"><thead>{}</thead><tbody>\n",
                      heading_row(table.front()));
  for (std::size_t row = 1; row < table.size(); ++row) {
    const profiles::LockStats& lock = (*report.locks)[row - 1];
    // Sorted by the figure, shown as the command shows it.
    const std::uint64_t values[] = {0,
                                    0,
                                    lock.acquisitions,
                                    lock.contended,
                                    lock.wait_p50_ns,
                                    lock.wait_p99_ns,
                                    lock.wait_max_ns,
                                    lock.hold_p99_ns};
    html += "<tr>";
    for (std::size_t column = 0; column < table[row].size(); ++column) {
      const std::string& shown = table[row][column];
      html += column < 2 || column >= std::size(values) || shown == "-"
                  ? fmt::format("<td data-value=\"{0}\">{0}</td>", escape(shown))
                  : cell(static_cast<double>(values[column]), shown);
    }
    html += "</tr>\n";
  }
  html += "</tbody></table>\n";
  for (const profiles::LockInversion& inversion : report.inversions) {
    html += lines(inversion_lines(inversion, true), "warning");
  }
  return html + "</section>\n";
}

bool has_locks(const profiles::LockReport& report) {
  return (report.locks && !report.locks->empty()) || !report.deadlocks.empty() ||
         !report.inversions.empty();
}

// The flame graph of the time by stack of the trace window.
std::string flame_section(const FoldedFile& folded) {
  std::string html = "<section id=\"flame\"><h2>Flame graph</h2>\n";
  const char* name = file_of(Format::Folded);
  if (!folded.text) {
    return html + fmt::format("<p class=\"note\">No {} in this directory (a process run with "
                              "HOTSCOPE_TRACE_MIB=0 keeps no trace).</p></section>\n",
                              name);
  }
  const profiles::StackLines stacks = profiles::folded_stacks(*folded.text, folded.source);
  if (stacks.starts.empty()) {
    return html + fmt::format("<p class=\"note\">{} holds no stack: no scope ran in the trace "
                              "window.</p></section>\n",
                              name);
  }
  html += fmt::format("<p class=\"note\">Self time by stack in the trace window ({}): process, "
                      "thread, then scopes. Click a frame to zoom, Search to highlight frames by "
                      "name; hover for time and share.</p>\n",
                      name);
  return html +
         flame_svg(flame_graph(stacks), {"Time by stack", name, FlameUnit::Nanoseconds, false}) +
         "</section>\n";
}

// The flame graph of the CPU samples by stack (docs/cpu.md), when the directory has them.
std::string cpu_flame_section(const FoldedFile& folded) {
  if (!folded.text) {
    return "";
  }
  const char* name = file_of(Format::CpuFolded);
  const profiles::StackLines stacks = profiles::folded_stacks(*folded.text, folded.source);
  std::string html = "<section id=\"cpu-flame\"><h2>CPU flame graph</h2>\n";
  if (stacks.starts.empty()) {
    return html + fmt::format("<p class=\"note\">{} holds no stack.</p></section>\n", name);
  }
  html += fmt::format("<p class=\"note\">CPU samples by stack ({}): native frames, and the scopes "
                      "open at each sample among them. A thread that waits has none.</p>\n",
                      name);
  return html +
         flame_svg(flame_graph(stacks), {"CPU samples by stack", name, FlameUnit::Samples, false}) +
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
                      "at t-end: {} in {} blocks ({} sites, {})</p>\n",
                      human_bytes(sums[0]), sums[1], human_bytes(sums[2]), sums[3],
                      human_bytes(sums[4]), sums[5], sites.size(), file_of(Format::Dhat));
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
    html += flame_svg(flame_graph(stacks), {"Bytes allocated by stack",
                                            fmt::format("{}: total bytes", file_of(Format::Dhat)),
                                            FlameUnit::Bytes, false});
  }
  return html + "</section>\n";
}

std::string header(const profiles::Stats& stats) {
  const std::string process =
      fmt::format("{} (pid {})", stats.process_name.value_or(""), stats.pid);
  const profiles::Records& records = stats.records;
  std::string html = fmt::format(
      "<h1>hotscope report: {}</h1>\n<p class=\"summary\">duration {}; clock {}, {:.3f} GHz "
      "({}); hotscope {}</p>\n<p class=\"summary\">records: written={} kept={} dropped={}</p>\n",
      escape(process), human_duration(stats.duration_ns), escape(stats.clock.source),
      stats.clock.ticks_per_second / 1e9, escape(stats.clock.frequency_origin),
      escape(stats.hotscope_version), records.written, records.kept, records.dropped);
  if (records.dropped > 0) {
    html += fmt::format("<p class=\"warning\">{} records dropped (a thread's ring was full): the "
                        "figures miss those calls.</p>\n",
                        records.dropped);
  }
  return html;
}

} // namespace

std::string html_report(const std::string& dir) {
  const fs::path root(dir);
  const fs::path stats_file = root / file_of(Format::StatsJson);
  if (!fs::exists(stats_file)) {
    throw Failure(kUsage, fmt::format("no {} in {}: give a directory hotscope wrote its reports "
                                      "into (HOTSCOPE_OUT)",
                                      file_of(Format::StatsJson), dir));
  }
  const profiles::Profile stats = profiles::read_profile(stats_file.string());
  std::optional<profiles::Profile> heap;
  if (const fs::path heap_file = root / file_of(Format::Dhat); fs::exists(heap_file)) {
    heap = profiles::read_profile(heap_file.string());
  }
  const auto folded = [&](Format format) {
    const fs::path file = root / file_of(format);
    return FoldedFile{fs::exists(file) ? std::optional(profiles::read_text(file.string()))
                                       : std::nullopt,
                      file.string()};
  };
  return html_page(stats, heap, folded(Format::Folded), folded(Format::CpuFolded));
}

std::string html_page(const profiles::Profile& stats, const std::optional<profiles::Profile>& heap,
                      const FoldedFile& folded, const FoldedFile& cpu_folded) {
  if (stats.kind != profiles::Kind::Stats) {
    throw Failure(kUsage, fmt::format("{} is {}, not a stats.json", stats.source,
                                      profiles::kind_name(stats.kind)));
  }
  if (heap && heap->kind != profiles::Kind::Heap) {
    throw Failure(kUsage, fmt::format("{} is {}, not a heap profile", heap->source,
                                      profiles::kind_name(heap->kind)));
  }
  const profiles::Stats& document = stats.stats;
  const double duration_ns = document.duration_ns;
  const Extras extras{document.allocated_blocks > 0, document.has_cpu_samples()};
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta "
      "charset=\"utf-8\">\n<link rel=\"icon\" href=\"data:,\">\n<title>hotscope report: {} (pid "
      "{})</title>\n<style>\n{}{}</style></head>\n<body>\n",
      escape(document.process_name.value_or("")), document.pid, assets::kReportCss,
      assets::kFlameCss);
  html += header(document);
  html += "<nav><a href=\"#functions\">Functions</a><a href=\"#flame\">Flame graph</a>";
  html += cpu_folded.text ? "<a href=\"#cpu-flame\">CPU flame graph</a>" : "";
  html += "<a href=\"#threads\">Threads</a>";
  html += has_locks(document.locks) ? "<a href=\"#locks\">Locks</a>" : "";
  html += heap ? "<a href=\"#heap\">Heap</a></nav>\n" : "</nav>\n";
  html += fmt::format("<section id=\"functions\"><h2>Functions</h2>\n<p class=\"note\">Over all "
                      "threads; % Total is total time over the duration.{} Click a heading to "
                      "sort.</p>\n",
                      extras.cpu ? " CPU Self and CPU Total are sampled CPU time while the "
                                   "function was the innermost open scope, or open at all."
                                 : "");
  html += functions_table(document.functions, duration_ns, extras, "functions-table");
  html += "</section>\n";
  html += flame_section(folded);
  html += cpu_flame_section(cpu_folded);
  html += threads_section(document, duration_ns, extras);
  if (has_locks(document.locks)) {
    html += locks_section(document.locks);
  }
  if (heap) {
    html += heap_section(*heap);
  }
  html += fmt::format("<script>\n{}</script>\n<script>\n{}</script>\n</body></html>\n",
                      assets::kReportJs, assets::kFlameJs);
  return html;
}

} // namespace hotscope::cli::report
