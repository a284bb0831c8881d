#include "pipescope/calibrate/bench_results.h"

#include <cmath>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "pipescope/common/json_error_text.h"
#include "pipescope/common/json_fields.h"
#include "pipescope/common/text_file.h"

namespace pipescope::calibrate {
namespace {

using nlohmann::json;

// "gemm/bf16/m:1024/n:512/k:64/manual_time" -> family, variant, parameters.
struct ParsedName {
  std::string family, variant;
  std::map<std::string, std::string> params;
};

ParsedName parse_name(std::string_view name) {
  ParsedName out;
  size_t index = 0;
  while (!name.empty()) {
    const size_t slash = name.find('/');
    const std::string_view part = name.substr(0, slash);
    if (index == 0) {
      out.family = part;
    } else if (index == 1) {
      out.variant = part;
    } else if (const size_t colon = part.find(':'); colon != std::string_view::npos) {
      out.params.emplace(part.substr(0, colon), part.substr(colon + 1));
    }
    ++index;
    if (slash == std::string_view::npos) break;
    name.remove_prefix(slash + 1);
  }
  return out;
}

std::optional<double> seconds_per_unit(const std::string& unit) {
  if (unit == "ns") return 1e-9;
  if (unit == "us") return 1e-6;
  if (unit == "ms") return 1e-3;
  if (unit == "s") return 1.0;
  return std::nullopt;
}

class EntryReader {
 public:
  EntryReader(const json& entry, const std::string& origin) : entry_(entry), origin_(origin) {
    name_ = entry.value("run_name", entry.value("name", std::string()));
    parsed_ = parse_name(name_);
  }

  const std::string& name() const { return name_; }
  const ParsedName& parsed() const { return parsed_; }
  SampleId id() const { return {name_, origin_}; }

  Expected<double> seconds() const {
    const json* time = find("real_time");
    if (time != nullptr && time->is_null())
      return fail("has real_time NaN or Infinity; run that benchmark again");
    if (time == nullptr || !time->is_number()) return fail("has no numeric real_time");
    const auto unit = seconds_per_unit(entry_.value("time_unit", std::string("ns")));
    if (!unit) return fail("has an unknown time_unit");
    const double value = time->get<double>() * *unit;
    if (!std::isfinite(value) || value <= 0) {
      return fail("has time " + time->dump() + " " + entry_.value("time_unit", std::string("ns")) +
                  "; a measured time must be a positive finite number");
    }
    return value;
  }

  // A name parameter as an integer; the error names it.
  Expected<int64_t> integer(const std::string& key) const {
    const auto it = parsed_.params.find(key);
    if (it == parsed_.params.end()) return fail("lacks the parameter '" + key + ":'");
    try {
      size_t used = 0;
      const long long value = std::stoll(it->second, &used);
      if (used != it->second.size() || value < 0) throw std::invalid_argument(key);
      return static_cast<int64_t>(value);
    } catch (const std::exception&) {
      return fail("has '" + key + ":" + it->second + "', not a non-negative integer");
    }
  }

  Expected<double> counter(const std::string& key) const {
    const json* value = find(key);
    if (value != nullptr && value->is_null()) {
      return fail("has counter " + key +
                  " = NaN or Infinity: Google Benchmark could not compute it; run that benchmark again");
    }
    if (value == nullptr || !value->is_number()) return fail("lacks the counter '" + key + "'");
    const double v = value->get<double>();
    if (!std::isfinite(v) || v <= 0)
      return fail("has counter " + key + " = " + value->dump() + ", not positive");
    return v;
  }

  std::string label() const { return entry_.value("label", std::string()); }

  using CounterFields = std::initializer_list<std::pair<const char*, double*>>;
  // Counters the entry must have, each positive; the first missing or bad one is the error.
  Status counters(CounterFields fields) const {
    for (auto [key, field] : fields) {
      auto v = counter(key);
      if (!v.ok()) return v.error();
      *field = *v;
    }
    return Status::Ok();
  }
  // Counters read where present and positive (NVML readings), left as they are otherwise.
  void optional_counters(CounterFields fields) const {
    for (auto [key, field] : fields) {
      if (auto v = counter(key); v.ok()) *field = *v;
    }
  }

  // Name parameters that must each be a positive integer; the first missing or bad one is the error.
  Status positive_integers(std::initializer_list<std::pair<const char*, int64_t*>> fields) const {
    for (auto [key, field] : fields) {
      auto v = integer(key);
      if (!v.ok()) return v.error();
      if (*v == 0) return fail(std::string("has ") + key + ":0");
      *field = *v;
    }
    return Status::Ok();
  }

  // m:, n:, k:, each a positive integer.
  Status shape(int64_t& m, int64_t& n, int64_t& k) const {
    return positive_integers({{"m", &m}, {"n", &n}, {"k", &k}});
  }

  // The label's clock-event reasons ("clock_event_reasons NAMES"), empty when it has none.
  std::string clock_event_reasons() const {
    const std::string text = label(), prefix = "clock_event_reasons ";
    return text.rfind(prefix, 0) == 0 ? text.substr(prefix.size()) : std::string();
  }

  Error fail(const std::string& what) const {
    return Error{"benchmark results '" + origin_ + "': entry '" + name_ + "' " + what};
  }

 private:
  const json* find(const std::string& key) const {
    const auto it = entry_.find(key);
    return it == entry_.end() ? nullptr : &*it;
  }

  const json& entry_;
  const std::string& origin_;
  std::string name_;
  ParsedName parsed_;
};

// With repetitions, the median aggregate stands for the run; the other aggregates and the single
// repetitions it summarises are left out. A benchmark that ran once (the sustained GEMM sets its
// own repetitions) has no aggregate: its one run stands for it.
// The benchmark an entry belongs to: its run_name, else its name less an aggregate's suffix.
std::string run_name_of(const json& entry) {
  if (const auto it = entry.find("run_name"); it != entry.end() && it->is_string())
    return it->get<std::string>();
  std::string name = entry.value("name", std::string());
  const std::string suffix = "_" + entry.value("aggregate_name", std::string());
  if (entry.value("run_type", std::string()) == "aggregate" && name.size() > suffix.size() &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    name.resize(name.size() - suffix.size());
  return name;
}

bool should_take(const json& entry, const std::set<std::string>& names_with_medians) {
  const std::string run_type = entry.value("run_type", std::string("iteration"));
  if (run_type == "aggregate") return entry.value("aggregate_name", std::string()) == "median";
  return names_with_medians.count(run_name_of(entry)) == 0;
}

// A family priced for bf16 alone: another variant is noted as skipped (true), naming `what`.
bool skipped_unless_bf16(const EntryReader& e, const char* what, BenchResults& into) {
  if (e.parsed().variant == "bf16") return false;
  into.notes.push_back("skipped '" + e.name() + "' in " + e.id().file + ": " + what + " priced for bf16");
  return true;
}

// The training losses' families (docs/calibration-results.md).
Status add_gemm_layout(const EntryReader& e, double seconds, BenchResults& into) {
  const ParsedName& p = e.parsed();
  if (skipped_unless_bf16(e, "the layouts are", into)) return Status::Ok();
  GemmLayoutSample s{e.id(), 0, 0, 0, "", seconds};
  if (Status shape = e.shape(s.m, s.n, s.k); !shape.ok()) return shape;
  const auto pass = p.params.find("pass");
  if (pass == p.params.end() ||
      (pass->second != "forward" && pass->second != "dgrad" && pass->second != "wgrad"))
    return e.fail("has no pass:forward, pass:dgrad or pass:wgrad");
  s.pass = pass->second;
  into.gemm_layouts.push_back(std::move(s));
  return Status::Ok();
}

Status add_sustained(const EntryReader& e, BenchResults& into) {
  SustainedSample s;
  s.id = e.id();
  if (Status shape = e.shape(s.m, s.n, s.k); !shape.ok()) return shape;
  if (Status read = e.counters({{"burst_flops_per_s", &s.burst_flops_per_s},
                                {"sustained_flops_per_s", &s.sustained_flops_per_s},
                                {"seconds", &s.seconds}});
      !read.ok())
    return read;
  e.optional_counters({{"burst_sm_clock_mhz", &s.burst_sm_clock_mhz},
                       {"sustained_sm_clock_mhz", &s.sustained_sm_clock_mhz},
                       {"sustained_power_w", &s.sustained_power_w},
                       {"power_limit_w", &s.power_limit_w}});
  s.clock_event_reasons = e.clock_event_reasons();
  into.sustained.push_back(std::move(s));
  return Status::Ok();
}

Status add_interference(const EntryReader& e, BenchResults& into) {
  const ParsedName& p = e.parsed();
  if (p.variant != "gemm" && p.variant != "memory") return e.fail("is neither gemm nor memory work");
  InterferenceSample s;
  s.id = e.id();
  s.work = p.variant;
  auto sms = e.integer("sms");
  if (!sms.ok()) return sms.error();
  if (*sms == 0) return e.fail("has sms:0");
  s.sms = static_cast<int>(*sms);
  if (p.params.count("pause_ns") != 0) {
    auto pause = e.integer("pause_ns");
    if (!pause.ok()) return pause.error();
    s.pause_ns = *pause;
  }
  if (Status read = e.counters({{"alone_s", &s.alone_s},
                                {"beside_s", &s.beside_s},
                                {"background_bytes_per_s", &s.background_bytes_per_s}});
      !read.ok())
    return read;
  into.interference.push_back(std::move(s));
  return Status::Ok();
}

Status add_launch_gap(const EntryReader& e, BenchResults& into) {
  LaunchGapSample s;
  s.id = e.id();
  auto bytes = e.integer("bytes");
  if (!bytes.ok()) return bytes.error();
  s.bytes = *bytes;
  if (Status read = e.counters({{"stream_s_per_kernel", &s.stream_s},
                                {"graph_s_per_kernel", &s.graph_s},
                                {"host_s_per_launch", &s.host_s}});
      !read.ok())
    return read;
  into.launch_gaps.push_back(std::move(s));
  return Status::Ok();
}

Status add_eager_kernel(const EntryReader& e, double seconds, BenchResults& into) {
  EagerKernelSample s;
  s.id = e.id();
  s.op = e.parsed().variant;
  s.seconds = seconds;
  auto elements = e.integer("elements");
  if (!elements.ok()) return elements.error();
  if (*elements == 0) return e.fail("has elements:0");
  s.elements = *elements;
  auto bytes = e.counter("bytes");
  if (!bytes.ok()) return bytes.error();
  if (!(*bytes > 0)) return e.fail("moves no bytes");
  s.bytes = *bytes;
  into.eager_kernels.push_back(std::move(s));
  return Status::Ok();
}

Status add_unfused_attention(const EntryReader& e, double seconds, BenchResults& into) {
  const ParsedName& p = e.parsed();
  if (skipped_unless_bf16(e, "unfused attention is", into)) return Status::Ok();
  UnfusedAttentionSample s;
  s.id = e.id();
  s.seconds = seconds;
  if (Status shape =
          e.positive_integers({{"matrices", &s.matrices}, {"seq", &s.seq}, {"head_dim", &s.head_dim}});
      !shape.ok())
    return shape;
  auto dropout = e.integer("dropout_percent");
  if (!dropout.ok()) return dropout.error();
  s.dropout = *dropout > 0;
  const auto pass = p.params.find("pass");
  if (pass == p.params.end() || (pass->second != "forward" && pass->second != "backward"))
    return e.fail("has no pass:forward or pass:backward");
  s.backward = pass->second == "backward";
  into.unfused_attention.push_back(std::move(s));
  return Status::Ok();
}

// Context keys that differ between any two files of one session: when and how each ran, the host's
// load, and the GPU's instantaneous readings.
bool differs_by_nature(const std::string& key) {
  static const std::set<std::string> kKeys = {"date",     "command", "executable",    "pipescope_suite",
                                              "load_avg", "power_w", "temperature_c", "sm_clock_mhz"};
  return kKeys.count(key) != 0 || key.rfind("library_", 0) == 0 || key.rfind("cpu", 0) == 0 ||
         key.rfind("caches", 0) == 0;
}

std::string context_clash(const std::string& key, const std::string& first, const std::string& later,
                          const std::string& origin) {
  std::string note = "context '" + key + "' differs between files: '";
  note += first;
  note += "' and '";
  note += later;
  note += "' (" + origin + "); the first is kept";
  return note;
}

Status add_entry(const EntryReader& e, BenchResults& into) {
  const ParsedName& p = e.parsed();
  auto seconds = e.seconds();
  if (!seconds.ok()) return seconds.error();
  if (p.family == "gemm") {
    GemmSample s{e.id(), p.variant, 0, 0, 0, *seconds};
    if (Status shape = e.shape(s.m, s.n, s.k); !shape.ok()) return shape;
    into.gemm.push_back(std::move(s));
    return Status::Ok();
  }
  if (p.family == "attention") {
    if (p.variant != "forward" && p.variant != "backward") return e.fail("is neither forward nor backward");
    AttentionSample s;
    s.id = e.id();
    s.backward = p.variant == "backward";
    s.seconds = *seconds;
    s.kernel = e.label();
    if (Status shape = e.positive_integers(
            {{"batch", &s.batch}, {"heads", &s.heads}, {"seq", &s.seq}, {"head_dim", &s.head_dim}});
        !shape.ok())
      return shape;
    auto causal = e.integer("causal");
    s.causal = causal.ok() && *causal != 0;
    auto flops = e.counter("flops");
    if (!flops.ok()) return flops.error();
    s.flops = *flops;
    into.attention.push_back(std::move(s));
    return Status::Ok();
  }
  if (p.family == "hbm" || p.family == "memcpy") {
    auto bytes = e.counter("bytes");
    if (!bytes.ok()) return bytes.error();
    BandwidthSample s{e.id(), p.family, p.variant, *bytes, *seconds};
    for (auto [key, field] : {std::pair{"bytes", &s.operand_bytes}, {"hidden", &s.hidden}}) {
      if (p.params.count(key) == 0) continue;
      auto v = e.integer(key);
      if (!v.ok()) return v.error();
      *field = *v;
    }
    into.bandwidth.push_back(std::move(s));
    return Status::Ok();
  }
  if (p.family == "nccl") {
    auto ranks = e.integer("ranks");
    if (!ranks.ok()) return ranks.error();
    auto bytes = e.counter("bytes");
    if (!bytes.ok()) return bytes.error();
    auto nodes = e.counter("nodes");
    CollectiveSample s{e.id(), p.variant, static_cast<int>(*ranks), nodes.ok() ? static_cast<int>(*nodes) : 1,
                       *bytes, *seconds};
    if (s.ranks < 1) return e.fail("has ranks:0");
    into.collectives.push_back(std::move(s));
    return Status::Ok();
  }
  if (p.family == "gemm_layout") return add_gemm_layout(e, *seconds, into);
  if (p.family == "sustained") return add_sustained(e, into);
  if (p.family == "interference") return add_interference(e, into);
  if (p.family == "launch" && p.variant == "gap") return add_launch_gap(e, into);
  if (p.family == "eager") return add_eager_kernel(e, *seconds, into);
  if (p.family == "attention_unfused") return add_unfused_attention(e, *seconds, into);
  if (p.family == "device" && p.variant == "state") {
    DeviceStateSample s;
    s.id = e.id();
    const auto at = p.params.find("at");
    s.at = at == p.params.end() ? "?" : at->second;
    e.optional_counters({{"sm_clock_mhz", &s.sm_clock_mhz},
                         {"memory_clock_mhz", &s.memory_clock_mhz},
                         {"power_w", &s.power_w},
                         {"temperature_c", &s.temperature_c}});
    s.clock_event_reasons = e.clock_event_reasons();
    into.device_states.push_back(std::move(s));
    return Status::Ok();
  }
  if (p.family == "gemm_batched") {
    // Read by scripts/gpu-batched-gemm-compare.py, not fitted yet: one note for all of them.
    if (into.batched_gemms_skipped++ == 0) {
      into.notes.emplace_back(
          "skipped the gemm_batched results: not fitted yet (scripts/gpu-batched-gemm-compare.py reads "
          "them)");
    }
    return Status::Ok();
  }
  into.notes.push_back("skipped '" + e.name() + "' in " + e.id().file + ": not a calibration benchmark");
  return Status::Ok();
}

// Google Benchmark's JSON reporter writes non-finite numbers as bare NaN / Infinity (with a sign
// when negative), which JSON has no words for. Its aggregates make them routinely: the
// coefficient of variation of a counter that is zero in every repetition is 0/0. They become
// null here, so that an entry the fit never reads (a _cv aggregate) costs nothing and one it
// reads says which number was not computed.
constexpr std::string_view kNonFiniteTokens[] = {"-Infinity", "Infinity", "-NaN", "NaN"};

std::string with_non_finite_as_null(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (std::string_view token : kNonFiniteTokens) {
      if (text.substr(i, token.size()) == token) {
        out += "null";
        i += token.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

bool has_bare_non_finite(std::string_view text, size_t error_byte) {
  const size_t from = error_byte >= 2 ? error_byte - 2 : 0;  // the parser stops on or after it
  for (std::string_view token : kNonFiniteTokens) {
    const size_t at = text.find(token, from);
    if (at != std::string_view::npos && at <= error_byte) return true;
  }
  return false;
}

json parse_results(std::string_view text) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    if (!has_bare_non_finite(text, e.byte)) throw;
  }
  return json::parse(with_non_finite_as_null(text));
}

}  // namespace

std::string BenchResults::context_value(std::string_view key) const {
  const auto it = context.find(std::string(key));
  return it == context.end() ? std::string() : it->second;
}

Status add_bench_results(std::string_view text, const std::string& origin, BenchResults& into) {
  json doc;
  try {
    doc = parse_results(text);
  } catch (const json::parse_error& e) {
    return Error{"benchmark results '" + origin + "' are not JSON (" + json_error_text(e) +
                 "); write them with --benchmark_out=FILE --benchmark_out_format=json"};
  } catch (const json::exception& e) {
    return Error{"benchmark results '" + origin + "' hold a number out of range (" + json_error_text(e) +
                 ")"};
  }
  if (!doc.is_object() || !doc.contains("benchmarks") || !doc["benchmarks"].is_array()) {
    return Error{"benchmark results '" + origin +
                 "' have no \"benchmarks\" list: not a Google Benchmark JSON file"};
  }
  std::map<std::string, std::string> own_context;
  if (const auto context = doc.find("context"); context != doc.end() && context->is_object()) {
    for (const auto& [key, value] : context->items()) {
      const std::string text_value = value.is_string() ? value.get<std::string>() : value.dump();
      own_context.emplace(key, text_value);
      const auto [it, inserted] = into.context.emplace(key, text_value);
      if (!inserted && it->second != text_value && !differs_by_nature(key))
        into.notes.push_back(context_clash(key, it->second, text_value, origin));
    }
  }
  const json& list = doc["benchmarks"];
  // The fields read below by name, checked for their types first (the one field reader's rules).
  JsonFieldReader fields("benchmark results '" + origin + "'");
  for (size_t i = 0; i < list.size() && fields.ok(); ++i) {
    const std::string path = index_path("benchmarks", i);
    if (!fields.expect_object(list[i], path)) break;
    for (const char* key :
         {"name", "run_name", "run_type", "aggregate_name", "time_unit", "label", "error_message"})
      fields.optional_string(list[i], key, path);
    fields.optional_boolean(list[i], "error_occurred", path);
  }
  if (!fields.ok()) return fields.error();
  std::set<std::string> names_with_medians;
  for (const json& entry : list) {
    if (entry.value("aggregate_name", std::string()) == "median")
      names_with_medians.insert(run_name_of(entry));
  }
  size_t taken = 0;
  for (const json& entry : list) {
    if (!should_take(entry, names_with_medians)) continue;
    const EntryReader reader(entry, origin);
    if (entry.value("error_occurred", false)) {
      into.notes.push_back("skipped '" + reader.name() + "' in " + origin +
                           ": the benchmark reported an error (" +
                           entry.value("error_message", std::string("no message")) + ")");
      continue;
    }
    Status added = add_entry(reader, into);
    if (!added.ok()) return added;
    ++taken;
  }
  if (taken == 0) {
    return Error{"benchmark results '" + origin + "' hold no measurement (an empty \"benchmarks\" list)"};
  }
  into.files.push_back(origin);
  into.file_contexts.push_back(std::move(own_context));
  return Status::Ok();
}

Status read_bench_file(const std::string& path, BenchResults& into) {
  auto text = read_text_file(path, "benchmark results");
  if (!text) return text.error();
  return add_bench_results(*text, path, into);
}

}  // namespace pipescope::calibrate
