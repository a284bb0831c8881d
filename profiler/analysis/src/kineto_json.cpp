#include "kineto_json.h"

#include <simdjson.h>

#include <cctype>
#include <cstring>
#include <functional>
#include <vector>

namespace pipescope::analysis::kineto {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

static_assert(DocumentText::kPaddingBytes >= simdjson::SIMDJSON_PADDING);

bool is_blank(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// A value of another type than the field's leaves the field absent (an integer that does not
// fit, too); a malformed value is a parse failure.
bool absent(error_code e) { return e == simdjson::INCORRECT_TYPE || e == simdjson::NUMBER_OUT_OF_RANGE; }

// A field read as one type that holds a word: the word must be true, false or null. (On-Demand
// checks only what is read; values of fields that are never read are checked for structure.)
error_code check_word(od::value v, od::json_type type) {
  if (type == od::json_type::boolean) {
    bool b = false;
    return v.get_bool().get(b) ? simdjson::T_ATOM_ERROR : simdjson::SUCCESS;
  }
  if (type == od::json_type::null) {
    bool null = false;
    return v.is_null().get(null) || !null ? simdjson::N_ATOM_ERROR : simdjson::SUCCESS;
  }
  return simdjson::SUCCESS;
}

error_code read_number(od::value v, std::optional<double>& out) {
  od::json_type type;
  if (error_code e = v.type().get(type)) return e;
  if (type != od::json_type::number) return check_word(v, type);
  double d = 0;
  const error_code e = v.get_double().get(d);
  if (e == simdjson::SUCCESS) out = d;
  return absent(e) ? simdjson::SUCCESS : e;
}

// A string without escapes is its own text in the document (no copy); one with escapes is
// unescaped into the parser's buffer.
error_code read_string(od::value v, std::string_view& out) {
  od::json_type type;
  if (error_code e = v.type().get(type)) return e;
  if (type != od::json_type::string) return check_word(v, type);
  std::string_view token = v.raw_json_token();  // the quotes, and any blanks before the next token
  while (token.size() > 2 && is_blank(token.back())) token.remove_suffix(1);
  if (token.size() >= 2 && token.back() == '"' && token.find('\\') == std::string_view::npos) {
    out = token.substr(1, token.size() - 2);
    return simdjson::SUCCESS;
  }
  return v.get_string().get(out);
}

// Integers as they are (truncated to 32 bits), fractions truncated, strings hashed.
error_code read_id(od::value v, uint32_t& out) {
  od::json_type type;
  if (error_code e = v.type().get(type)) return e;
  if (type == od::json_type::string) {
    std::string_view s;
    if (error_code e = v.get_string().get(s)) return e;
    out = static_cast<uint32_t>(std::hash<std::string_view>{}(s));
    return simdjson::SUCCESS;
  }
  if (type != od::json_type::number) return check_word(v, type);
  od::number_type kind;
  if (error_code e = v.get_number_type().get(kind)) return absent(e) ? simdjson::SUCCESS : e;
  error_code e = simdjson::SUCCESS;
  if (kind == od::number_type::signed_integer) {
    int64_t i = 0;
    e = v.get_int64().get(i);
    if (!e) out = static_cast<uint32_t>(i);
  } else if (kind == od::number_type::unsigned_integer) {
    uint64_t u = 0;
    e = v.get_uint64().get(u);
    if (!e) out = static_cast<uint32_t>(u);
  } else {
    double d = 0;
    e = v.get_double().get(d);
    if (!e) out = static_cast<uint32_t>(d);
  }
  return absent(e) ? simdjson::SUCCESS : e;
}

error_code read_dim3(od::value v, std::array<uint32_t, 3>& out) {
  od::json_type type;
  if (error_code e = v.type().get(type)) return e;
  if (type != od::json_type::array) return simdjson::SUCCESS;
  size_t i = 0;
  for (auto element : v.get_array()) {
    od::value part;
    if (error_code e = element.get(part)) return e;
    std::optional<double> n;
    if (error_code e = read_number(part, n)) return e;
    if (i < out.size() && n) out[i] = static_cast<uint32_t>(*n);
    ++i;
  }
  return simdjson::SUCCESS;
}

// "[0, 1, 2, 3]": ranks; empty when the list is cut short ("...") or odd.
void ranks_of_text(std::string_view text, std::vector<int32_t>& ranks) {
  if (text.find("...") != std::string_view::npos) return;
  int64_t current = -1;
  for (const char c : text) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      current = (current < 0 ? 0 : current * 10) + (c - '0');
      if (current > INT32_MAX) return ranks.clear();
    } else {
      if (current >= 0) ranks.push_back(static_cast<int32_t>(current));
      current = -1;
      if (c != '[' && c != ']' && c != ',' && c != ' ') return ranks.clear();
    }
  }
  if (current >= 0) ranks.push_back(static_cast<int32_t>(current));
}

error_code read_ranks(od::value v, std::vector<int32_t>& ranks) {
  ranks.clear();
  od::json_type type;
  if (error_code e = v.type().get(type)) return e;
  if (type == od::json_type::string) {
    std::string_view text;
    if (error_code e = v.get_string().get(text)) return e;
    ranks_of_text(text, ranks);
    return simdjson::SUCCESS;
  }
  if (type != od::json_type::array) return simdjson::SUCCESS;
  bool whole = true;
  for (auto element : v.get_array()) {
    od::value r;
    if (error_code e = element.get(r)) return e;
    int64_t rank = 0;
    const error_code e = r.get_int64().get(rank);
    if (e && !absent(e)) return e;
    if (e || rank < INT32_MIN || rank > INT32_MAX) whole = false;
    if (whole) ranks.push_back(static_cast<int32_t>(rank));
  }
  if (!whole) ranks.clear();
  return simdjson::SUCCESS;
}

// One tensor's dims: the element count, absent unless a non-empty list of non-negative numbers.
error_code read_elements(od::value v, std::optional<uint64_t>& out) {
  od::json_type type;
  if (error_code e = v.type().get(type)) return e;
  if (type != od::json_type::array) return simdjson::SUCCESS;
  uint64_t elements = 1;
  bool usable = true, any = false;
  for (auto element : v.get_array()) {
    od::value d;
    if (error_code e = element.get(d)) return e;
    std::optional<double> n;
    if (error_code e = read_number(d, n)) return e;
    any = true;
    if (!n || *n < 0) usable = false;
    if (usable) elements *= static_cast<uint64_t>(*n);
  }
  if (usable && any) out = elements;
  return simdjson::SUCCESS;
}

error_code read_input_dims(od::value v, EventArgs& args) {
  od::json_type type;
  if (error_code e = v.type().get(type)) return e;
  if (type != od::json_type::array) return simdjson::SUCCESS;
  size_t i = 0;
  for (auto element : v.get_array()) {
    od::value dims;
    if (error_code e = element.get(dims)) return e;
    if (i < kTensorsRead)
      if (error_code e = read_elements(dims, args.input_elements[i])) return e;
    ++i;
  }
  args.input_dims_count = i;
  return simdjson::SUCCESS;
}

error_code read_input_types(od::value v, EventArgs& args) {
  od::json_type type;
  if (error_code e = v.type().get(type)) return e;
  if (type != od::json_type::array) return simdjson::SUCCESS;
  size_t i = 0;
  for (auto element : v.get_array()) {
    od::value name;
    if (error_code e = element.get(name)) return e;
    if (i < kTensorsRead) {
      std::string_view s;
      od::json_type t;
      if (error_code e = name.type().get(t)) return e;
      if (t == od::json_type::string) {
        if (error_code e = name.get_string().get(s)) return e;
        args.input_type[i] = s;
      }
    }
    ++i;
  }
  args.input_type_count = i;
  return simdjson::SUCCESS;
}

// A key's text up to its closing quote. Kineto's keys hold no escapes; one that does is cut at
// its escaped quote and matches no key read here, as it should not.
std::string_view key_text(od::raw_json_string key) {
  const char* start = key.raw();
  const char* end = start;
  while (*end != '"') ++end;  // the closing quote is there: the parser has indexed it
  return {start, static_cast<size_t>(end - start)};
}

error_code read_args(od::value v, EventArgs& args, std::vector<int32_t>& ranks) {
  od::json_type type;
  if (error_code e = v.type().get(type)) return e;
  if (type != od::json_type::object) return simdjson::SUCCESS;
  od::object object;
  if (error_code e = v.get_object().get(object)) return e;
  for (auto field : object) {
    od::raw_json_string raw_key;
    if (error_code e = field.key().get(raw_key)) return e;
    const std::string_view key = key_text(raw_key);
    od::value value = field.value();
    error_code e = simdjson::SUCCESS;
    // By length first: most keys of a trace are ones nothing here reads.
    switch (key.size()) {
      case 4:
        if (key == "grid")
          e = read_dim3(value, args.grid);
        else if (key == "Addr")
          e = read_number(value, args.address);
        break;
      case 5:
        if (key == "block")
          e = read_dim3(value, args.block);
        else if (key == "bytes")
          e = read_number(value, args.bytes);
        else if (key == "dtype")
          e = read_string(value, args.dtype);
        else if (key == "Bytes")
          e = read_number(value, args.memory_bytes);
        break;
      case 6:
        if (key == "device")
          e = read_number(value, args.device);
        else if (key == "stream")
          e = read_number(value, args.stream);
        break;
      case 9:
        if (key == "Device Id") e = read_number(value, args.device_id);
        break;
      case 10:
        if (key == "Input Dims")
          e = read_input_dims(value, args);
        else if (key == "Input type")
          e = read_input_types(value, args);
        else if (key == "Group size")
          e = read_number(value, args.group_size);
        break;
      case 11:
        if (key == "External id")
          e = read_id(value, args.external_id);
        else if (key == "correlation")
          e = read_id(value, args.correlation);
        else if (key == "Device Type")
          e = read_number(value, args.device_type);
        break;
      case 13:
        if (key == "shared memory")
          e = read_number(value, args.shared_memory);
        else if (key == "In msg nelems")
          e = read_number(value, args.in_msg_nelems);
        break;
      case 14:
        if (key == "Out msg nelems") e = read_number(value, args.out_msg_nelems);
        break;
      case 15:
        if (key == "Collective name") e = read_string(value, args.collective_name);
        break;
      case 18:
        if (key == "Process Group Name") e = read_string(value, args.group_name);
        break;
      case 19:
        if (key == "Process Group Ranks") {
          e = read_ranks(value, ranks);
          args.group_ranks = ranks;
        }
        break;
      case 20:
        if (key == "registers per thread") e = read_number(value, args.registers_per_thread);
        break;
      default: break;
    }
    if (e) return e;
  }
  return simdjson::SUCCESS;
}

error_code read_event(od::object object, Event& event, std::vector<int32_t>& ranks,
                      const DocumentHandler& handler) {
  for (auto field : object) {
    od::raw_json_string raw_key;
    if (error_code e = field.key().get(raw_key)) return e;
    const std::string_view key = key_text(raw_key);
    od::value value = field.value();
    error_code e = simdjson::SUCCESS;
    switch (key.size()) {
      case 2:
        if (key == "ph")
          e = read_string(value, event.ph);
        else if (key == "ts")
          e = read_number(value, event.ts_us);
        break;
      case 3:
        if (key == "cat")
          e = read_string(value, event.cat);
        else if (key == "tid")
          e = read_id(value, event.tid);
        else if (key == "dur") {
          std::optional<double> dur;
          e = read_number(value, dur);
          event.dur_us = dur && *dur > 0 ? *dur : 0;
        }
        break;
      case 4:
        if (key == "name")
          e = read_string(value, event.name);
        else if (key == "args" && handler.wants_args(event))
          e = read_args(value, event.args, ranks);
        break;
      default: break;
    }
    if (e) return e;
  }
  return simdjson::SUCCESS;
}

error_code read_distributed_info(od::value v, DistributedInfo& info) {
  od::json_type type;
  if (error_code e = v.type().get(type)) return e;
  if (type != od::json_type::object) return simdjson::SUCCESS;
  od::object object;
  if (error_code e = v.get_object().get(object)) return e;
  for (auto field : object) {
    od::raw_json_string key;
    if (error_code e = field.key().get(key)) return e;
    od::value value = field.value();
    error_code e = simdjson::SUCCESS;
    if (key.unsafe_is_equal("rank")) {
      od::json_type t;
      od::number_type kind{};
      if ((e = value.type().get(t))) return e;
      if (t == od::json_type::number && !value.get_number_type().get(kind) &&
          kind != od::number_type::floating_point_number) {
        int64_t rank = 0;
        e = value.get_int64().get(rank);
        if (!e) info.rank = rank;
        if (absent(e)) e = simdjson::SUCCESS;
      }
    } else if (key.unsafe_is_equal("world_size")) {
      e = read_number(value, info.world_size);
    } else if (key.unsafe_is_equal("backend")) {
      std::string_view backend;
      e = read_string(value, backend);
      info.backend = std::string(backend);
    }
    if (e) return e;
  }
  return simdjson::SUCCESS;
}

// Writes `opener` over text[open] (unless it is 0) and `closer`, then a blank, at text[end];
// puts them back when it goes.
class WindowMarks {
 public:
  WindowMarks(DocumentText& text, size_t open, char opener, size_t end, char closer)
      : text_(text), open_(open), end_(end), saved_open_(text.data()[open]) {
    std::memcpy(saved_end_, text.data() + end, 2);
    if (opener != 0) text.data()[open] = opener;
    text.data()[end] = closer;
    text.data()[end + 1] = ' ';
  }
  ~WindowMarks() {
    std::memcpy(text_.data() + end_, saved_end_, 2);
    text_.data()[open_] = saved_open_;
  }
  WindowMarks(const WindowMarks&) = delete;
  WindowMarks& operator=(const WindowMarks&) = delete;

 private:
  DocumentText& text_;
  size_t open_, end_;
  char saved_open_;
  char saved_end_[2];
};

// After a string the cut fell inside: just past its closing quote (or the end of the text).
size_t past_string(const DocumentText& text, size_t at) {
  const char* data = const_cast<DocumentText&>(text).data();
  while (at < text.size()) {
    const void* quote = std::memchr(data + at, '"', text.size() - at);
    if (quote == nullptr) return text.size();
    const size_t q = static_cast<const char*>(quote) - data;
    size_t backslashes = 0;
    while (q - backslashes > 0 && data[q - backslashes - 1] == '\\') ++backslashes;
    at = q + 1;
    if (backslashes % 2 == 0) return at;
  }
  return text.size();
}

class Reader {
 public:
  Reader(DocumentText& text, const std::string& origin, const ReaderOptions& options)
      : text_(text), origin_(origin), options_(options) {
    // Room for a window and the string that may end it, once: a parser that grows reallocates,
    // and fresh pages cost more than the parsing.
    if (parser_.allocate(std::min(text.size() + 2, 2 * options.window_bytes + (size_t{64} << 10))) !=
        simdjson::SUCCESS) {
      // Left to the first window, which allocates what it needs or says why it cannot.
    }
  }

  Status read(DocumentHandler& handler) {
    DistributedInfo info;
    bool info_seen = false;
    auto events_open = read_header(info, info_seen);
    if (!events_open) return events_open.error();
    if (!info_seen) {
      // distributedInfo after the events (or nowhere): find the array's end, then read on.
      NoEvents skip;
      auto close = read_events(*events_open, skip, false);
      if (!close) return close.error();
      if (Status s = read_tail(*close, info); !s) return s;
    }
    if (Status s = handler.on_distributed_info(info); !s) return s;
    auto close = read_events(*events_open, handler, true);
    if (!close) return close.error();
    DistributedInfo ignored;
    return read_tail(*close, ignored);
  }

 private:
  struct NoEvents : DocumentHandler {
    Status on_distributed_info(const DistributedInfo&) override { return {}; }
    void on_event(const Event&) override {}
    bool wants_args(const Event&) const override { return false; }
  };

  Error not_json(error_code e, size_t at) const {
    return Error(origin_ + " is not JSON (" + simdjson::error_message(e) + " near byte " +
                 std::to_string(at) + ")");
  }

  // The top-level fields up to `traceEvents`: the offset of the array's '['.
  Expected<size_t> read_header(DistributedInfo& info, bool& info_seen) {
    size_t window = std::min(text_.size(), size_t{64} << 10);
    for (;;) {
      size_t end = window;
      std::optional<size_t> open;
      bool no_events_array = false;
      error_code e = simdjson::SUCCESS;
      for (;;) {
        info = DistributedInfo{};
        info_seen = false;
        WindowMarks marks(text_, 0, 0, end, '}');
        od::document doc;
        e = parser_.iterate(text_.data(), end + 1, text_.capacity()).get(doc);
        if (e == simdjson::UNCLOSED_STRING && end < text_.size()) {
          end = past_string(text_, end);
          continue;
        }
        if (!e) e = header_fields(doc, info, info_seen, open, no_events_array);
        break;
      }
      if (open) return *open;
      if (no_events_array || (!e && end >= text_.size()))
        return Error(origin_ + " has no traceEvents array: not a PyTorch profiler trace");
      if (end >= text_.size()) return not_json(e, 0);
      window = std::min(text_.size(), 2 * std::max(window, end));
    }
  }

  error_code header_fields(od::document& doc, DistributedInfo& info, bool& info_seen,
                           std::optional<size_t>& open, bool& no_events_array) {
    od::object top;
    if (error_code e = doc.get_object().get(top)) return e;
    for (auto field : top) {
      od::raw_json_string key;
      if (error_code e = field.key().get(key)) return e;
      od::value value = field.value();
      if (key.unsafe_is_equal("distributedInfo")) {
        if (error_code e = read_distributed_info(value, info)) return e;
        info_seen = true;
      } else if (key.unsafe_is_equal("traceEvents")) {
        od::json_type type;
        if (error_code e = value.type().get(type)) return e;
        if (type != od::json_type::array) {
          no_events_array = true;
          return simdjson::SUCCESS;
        }
        const std::string_view token = value.raw_json_token();
        open = static_cast<size_t>(token.data() - text_.data());
        return simdjson::SUCCESS;
      }
    }
    return simdjson::SUCCESS;
  }

  // The fields after the events array, which closes at `close`, up to the document's end: its
  // distributedInfo when it is there; an error when the document does not end as an object does.
  Status read_tail(size_t close, DistributedInfo& info) {
    size_t at = close + 1;
    while (at < text_.size() && is_blank(text_.data()[at])) ++at;
    if (at >= text_.size()) return not_json(simdjson::INCOMPLETE_ARRAY_OR_OBJECT, at);
    if (text_.data()[at] == '}') {
      for (size_t rest = at + 1; rest < text_.size(); ++rest)
        if (!is_blank(text_.data()[rest])) return not_json(simdjson::TRAILING_CONTENT, rest);
      return {};
    }
    if (text_.data()[at] != ',') return not_json(simdjson::TAPE_ERROR, at);
    // The comma as the opening brace of an object of the remaining fields.
    WindowMarks marks(text_, at, '{', text_.size(), ' ');
    od::document doc;
    od::object top;
    error_code e = parser_.iterate(text_.data() + at, text_.size() - at, text_.capacity() - at).get(doc);
    if (!e) e = doc.get_object().get(top);
    if (!e) {
      for (auto field : top) {
        od::raw_json_string key;
        if ((e = field.key().get(key))) break;
        if (key.unsafe_is_equal("distributedInfo") && (e = read_distributed_info(field.value(), info))) break;
      }
    }
    const char* after = nullptr;
    if (!e && doc.current_location().get(after) == simdjson::SUCCESS) e = simdjson::TRAILING_CONTENT;
    return e ? Status(not_json(e, at)) : Status();
  }

  // Every event of the array that opens at `open`; the offset of its closing ']'.
  Expected<size_t> read_events(size_t open, DocumentHandler& handler, bool release_pages) {
    size_t window = options_.window_bytes;
    for (;;) {
      size_t end = std::min(text_.size(), open + window);
      WindowResult r;
      for (;;) {
        WindowMarks marks(text_, open, '[', end, ']');
        od::document doc;
        r = WindowResult{};
        r.resume_at = open;
        r.error = parser_.iterate(text_.data() + open, end - open + 1, text_.capacity() - open).get(doc);
        if (r.error == simdjson::UNCLOSED_STRING && end < text_.size()) {
          end = past_string(text_, end);
          continue;
        }
        if (!r.error) read_window(doc, open, end, handler, r);
        break;
      }
      if (!r.error && r.closed_at != end) return r.closed_at;  // the array's own ']'
      std::optional<size_t> next;
      if (!r.error && r.elements > 0) {
        // The window closed at the cut, after a whole element: on from the comma after it
        // (anything else means the cut split a number or a word).
        size_t at = end;
        while (at < text_.size() && is_blank(text_.data()[at])) ++at;
        if (at < text_.size() && text_.data()[at] == ']') return at;
        if (at < text_.size() && text_.data()[at] == ',') next = at;
      }
      if (!next && r.events > 0) next = r.resume_at;
      if (!next) {
        if (end >= text_.size())
          return not_json(r.error ? r.error : simdjson::INCOMPLETE_ARRAY_OR_OBJECT, r.resume_at);
        window *= 2;  // an element larger than the window
        continue;
      }
      if (release_pages) text_.release_before(open);
      open = *next;
      window = options_.window_bytes;
    }
  }

  struct WindowResult {
    error_code error = simdjson::SUCCESS;
    size_t elements = 0;   // begun, events or not
    size_t events = 0;     // handed on
    size_t resume_at = 0;  // the ',' after the last one handed on
    size_t closed_at = 0;  // where the array closed (when no error)
  };

  void read_window(od::document& doc, size_t open, size_t end, DocumentHandler& handler, WindowResult& r) {
    od::array events;
    if ((r.error = doc.get_array().get(events))) return;
    for (auto element : events) {
      od::value value;
      if ((r.error = element.get(value))) return;
      od::json_type type;
      if ((r.error = value.type().get(type))) return;
      ++r.elements;
      if (type != od::json_type::object) continue;
      od::object object;
      if ((r.error = value.get_object().get(object))) return;
      Event event;
      if ((r.error = read_event(object, event, ranks_, handler))) return;
      const char* after = nullptr;
      if ((r.error = doc.current_location().get(after))) return;
      handler.on_event(event);
      ++r.events;
      r.resume_at = static_cast<size_t>(after - text_.data());
    }
    // Past the array's ']' is either nothing (it was the cut's) or what follows the array.
    const char* after = nullptr;
    if (doc.current_location().get(after) != simdjson::SUCCESS) {
      r.closed_at = end;
      return;
    }
    size_t at = static_cast<size_t>(after - text_.data());
    while (at > open && is_blank(text_.data()[at - 1])) --at;
    r.closed_at = at - 1;
  }

  DocumentText& text_;
  const std::string& origin_;
  const ReaderOptions& options_;
  od::parser parser_;
  std::vector<int32_t> ranks_;
};

}  // namespace

Status read_document(DocumentText& text, const std::string& origin, DocumentHandler& handler,
                     const ReaderOptions& options) {
  Reader reader(text, origin, options);
  return reader.read(handler);
}

}  // namespace pipescope::analysis::kineto
