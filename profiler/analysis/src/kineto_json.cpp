#include "kineto_json.h"

#include <simdjson.h>
#include <string.h>

#include <cstring>
#include <vector>

#include "kineto_event_fields.h"

namespace pipescope::analysis::kineto {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

static_assert(DocumentText::kPaddingBytes >= simdjson::SIMDJSON_PADDING);

bool is_blank(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// A value of another type than the field's leaves the field absent (an integer that does not
// fit, too); a malformed value is a parse failure.
bool absent(error_code e) { return e == simdjson::INCORRECT_TYPE || e == simdjson::NUMBER_OUT_OF_RANGE; }

// A field read as one type that holds a word: the word must be true, false or null. (On-Demand,
// which reads the fields around the events, checks only what is read; the rest it checks for
// structure.)
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

error_code read_string(od::value v, std::string_view& out) {
  od::json_type type;
  if (error_code e = v.type().get(type)) return e;
  if (type != od::json_type::string) return check_word(v, type);
  return v.get_string().get(out);
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

// After a string the cut fell inside: just past its closing quote (or the end of the text, or
// where a streamed text failed).
size_t past_string(DocumentText& text, size_t at) {
  constexpr size_t kStep = size_t{64} << 10;
  const char* data = text.data();
  while (at < text.size()) {
    const size_t limit = std::min(text.size(), at + kStep);
    if (!text.ensure(limit)) return text.size();
    const void* quote = std::memchr(data + at, '"', limit - at);
    if (quote == nullptr) {
      at = limit;
      continue;
    }
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
    const size_t capacity = std::min(text.size() + 2, 2 * options.window_bytes + (size_t{64} << 10));
    if (parser_.allocate(capacity) != simdjson::SUCCESS || dom_.allocate(capacity) != simdjson::SUCCESS) {
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
        if (!text_.ensure(end + 2)) return text_.failure();
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
    if (!text_.ensure(text_.size() + 2)) return text_.failure();
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

  // Every event of the array that opens at `open` (its '[' or a comma between events), window
  // by window; the offset of its closing ']'.
  Expected<size_t> read_events(size_t open, DocumentHandler& handler, bool release_pages) {
    for (;;) {
      // The window, the separator's search past it, and the marks after its end.
      if (!text_.ensure(open + 2 * options_.window_bytes + 4)) return text_.failure();
      // Where the window ends: first, Kineto's separator between events past the window's size
      // ("},\n": a line break is never inside a string), which the strict parse below confirms;
      // else where On-Demand finds the last whole element ends, or the array's own ']'.
      Boundary b;
      bool parsed = false;
      // Searched within one more window only: a document without the separator (written on one
      // line, or with CRLF) is not scanned to its end for each window.
      const size_t from = open + options_.window_bytes;
      if (from < text_.size()) {
        const size_t span = std::min(text_.size() - from, options_.window_bytes + 2);
        const void* hit = memmem(text_.data() + from, span, "},\n", 3);
        if (hit != nullptr) {
          b = Boundary{static_cast<size_t>(static_cast<const char*>(hit) - text_.data()) + 1, false};
          parsed = parse_window(open, b.close, handler) == simdjson::SUCCESS;
        }
      }
      if (!parsed) {
        auto found = find_boundary(open);
        if (!found) return found.error();
        b = *found;
        if (!text_.ensure(b.close + 2)) return text_.failure();
        if (error_code e = parse_window(open, b.close, handler)) return not_json(e, open);
      }
      if (b.array_end) return b.close;
      if (release_pages) text_.release_before(open);
      open = b.close;
    }
  }

  // A window's last byte: the comma after its last event, or the array's ']'.
  struct Boundary {
    size_t close = 0;
    bool array_end = false;
  };

  // The window [open, close] read with '[' and ']' at its ends by the DOM parser, which checks all
  // of it; its events handed on once it has.
  error_code parse_window(size_t open, size_t close, DocumentHandler& handler) {
    WindowMarks marks(text_, open, '[', close, ']');
    simdjson::dom::element doc;
    if (error_code e = dom_.parse(text_.data() + open, close - open + 1, false).get(doc)) return e;
    simdjson::dom::array events;
    if (error_code e = doc.get_array().get(events)) return e;
    for (simdjson::dom::element element : events) {
      simdjson::dom::object object;
      if (element.get_object().get(object) != simdjson::SUCCESS) continue;  // not an event
      Event event;
      read_event(object, event, ranks_, handler);
      handler.on_event(event);
    }
    return simdjson::SUCCESS;
  }

  // The boundary On-Demand finds: it skims a window from `open` (elements skipped, not read) and
  // takes the comma after the last element the cut left whole; a window with none doubles.
  Expected<Boundary> find_boundary(size_t open) {
    size_t window = options_.window_bytes;
    for (;;) {
      size_t end = std::min(text_.size(), open + window);
      Skim r;
      for (;;) {
        if (!text_.ensure(end + 2)) return text_.failure();
        WindowMarks marks(text_, open, '[', end, ']');
        od::document doc;
        r = Skim{};
        r.error = parser_.iterate(text_.data() + open, end - open + 1, text_.capacity() - open).get(doc);
        if (r.error == simdjson::UNCLOSED_STRING && end < text_.size()) {
          end = past_string(text_, end);
          continue;
        }
        if (!r.error) skim(doc, open, end, r);
        break;
      }
      // The marks are gone: what follows an element is the document's own.
      if (!r.error && r.closed_at != end) return Boundary{r.closed_at, true};
      // The cut may have split the last element (a number, a word): whole only when a comma or
      // the array's end follows it.
      for (const size_t element_end : {r.last_end, r.previous_end}) {
        if (element_end == 0) continue;
        const size_t at = skip_blanks(element_end);
        if (text_.failed()) return text_.failure();
        if (at < text_.size() && text_.data()[at] == ',') return Boundary{at, false};
        if (at < text_.size() && text_.data()[at] == ']') return Boundary{at, true};
      }
      if (end >= text_.size())
        return not_json(r.error ? r.error : simdjson::INCOMPLETE_ARRAY_OR_OBJECT, open);
      window *= 2;  // an element larger than the window
    }
  }

  // The first byte from `at` on that is not blank: size() when there is none (or where a streamed
  // text failed).
  size_t skip_blanks(size_t at) {
    for (; at < text_.size(); ++at) {
      if (!text_.ensure(at + 1)) return text_.size();
      if (!is_blank(text_.data()[at])) break;
    }
    return at;
  }

  struct Skim {
    error_code error = simdjson::SUCCESS;
    size_t last_end = 0, previous_end = 0;  // just past the last two elements skimmed (0: none)
    size_t closed_at = 0;                   // where the array closed (when no error)
  };

  void skim(od::document& doc, size_t open, size_t end, Skim& r) {
    od::array elements;
    if ((r.error = doc.get_array().get(elements))) return;
    for (auto element : elements) {
      od::value value;
      if ((r.error = element.get(value))) return;
      od::json_type type;
      if ((r.error = value.type().get(type))) return;
      std::string_view raw;
      if (type == od::json_type::object) {
        od::object object;
        if ((r.error = value.get_object().get(object)) || (r.error = object.raw_json().get(raw))) return;
      } else if (type == od::json_type::array) {
        od::array array;
        if ((r.error = value.get_array().get(array)) || (r.error = array.raw_json().get(raw))) return;
      } else {
        raw = value.raw_json_token();
      }
      // Skimming matches brackets by depth only: an element the cut's ']' closed is not whole.
      const auto element_end = static_cast<size_t>(raw.data() + raw.size() - text_.data());
      if (element_end > end) {
        r.error = simdjson::INCOMPLETE_ARRAY_OR_OBJECT;
        return;
      }
      r.previous_end = r.last_end;
      r.last_end = element_end;
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
  od::parser parser_;          // the header, the tail, and boundaries where no separator is found
  simdjson::dom::parser dom_;  // the events
  std::vector<int32_t> ranks_;
};

}  // namespace

Status read_document(DocumentText& text, const std::string& origin, DocumentHandler& handler,
                     const ReaderOptions& options) {
  Reader reader(text, origin, options);
  Status s = reader.read(handler);
  // A streamed document meets its gzip trailer's check at its end: a refusal before there may be
  // damage that the check names.
  if (!s && !text.check_rest() && !text.stream_gave_up()) return text.failure();
  return s;
}

}  // namespace pipescope::analysis::kineto
