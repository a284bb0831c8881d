#include "pipescope/planner/pipeline_layout.h"

#include <cctype>
#include <cstddef>

namespace pipescope::planner {
namespace {

// Far above any layout (1,024 layers, a few hundred chunks): a repetition past it is a typo.
constexpr size_t kMostSymbols = size_t{1} << 16;

const char* const kSyntax =
    "a layout is E (embedding), t (decoder layer), L (output layer and loss), '|' between chunks, X*N and "
    "(...)*N";

class LayoutReader {
 public:
  explicit LayoutReader(std::string_view text) : text_(text) {}

  Expected<std::string> symbols() {
    std::string out;
    if (Status s = sequence(out, false); !s) return s.error();
    return out;
  }

 private:
  std::string position() const { return "position " + std::to_string(pos_ + 1); }

  void skip_commas() {
    while (pos_ < text_.size() && text_[pos_] == ',') ++pos_;
  }

  // "*N" after a letter or a group: N, or 1 when there is no '*'.
  Expected<size_t> repetition() {
    skip_commas();
    if (pos_ >= text_.size() || text_[pos_] != '*') return size_t{1};
    ++pos_;
    const size_t start = pos_;
    size_t n = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      n = n * 10 + static_cast<size_t>(text_[pos_] - '0');
      if (n > kMostSymbols)
        return Error{"the repetition at position " + std::to_string(start) + " is too large"};
      ++pos_;
    }
    if (pos_ == start)
      return Error{"'*' at position " + std::to_string(start) + " is not followed by a count"};
    return n;
  }

  Status append(std::string& out, const std::string& piece, size_t times) {
    if (out.size() + piece.size() * times > kMostSymbols)
      return Error{"the layout expands to more than " + std::to_string(kMostSymbols) +
                   " layers and separators"};
    for (size_t i = 0; i < times; ++i) out += piece;
    return Status::Ok();
  }

  Status sequence(std::string& out, bool in_group) {
    while (true) {
      skip_commas();
      if (pos_ >= text_.size()) {
        if (in_group) return Error{"a '(' is not closed"};
        return Status::Ok();
      }
      const char c = text_[pos_];
      if (c == ')') {
        if (!in_group) return Error{"')' at " + position() + " closes no '('"};
        return Status::Ok();
      }
      if (c == '(') {
        if (in_group) return Error{"'(' at " + position() + " is inside another group; groups do not nest"};
        const size_t open = pos_++;
        std::string group;
        if (Status s = sequence(group, true); !s) return s;
        ++pos_;  // the ')'
        skip_commas();
        if (pos_ >= text_.size() || text_[pos_] != '*')
          return Error{"the group opened at position " + std::to_string(open + 1) +
                       " needs a count: (...)*N"};
        auto times = repetition();
        if (!times) return times.error();
        if (Status s = append(out, group, *times); !s) return s;
        continue;
      }
      if (c == 'm')
        return Error{"'m' at " + position() +
                     ": pipescope does not model multi-token-prediction layers; plan the model without them"};
      if (c != 'E' && c != 't' && c != 'L' && c != '|') {
        return Error{"'" + std::string(1, c) + "' at " + position() + " is not part of a layout; " + kSyntax};
      }
      ++pos_;
      auto times = repetition();
      if (!times) return times.error();
      if (Status s = append(out, std::string(1, c), *times); !s) return s;
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

std::string layers_text(int64_t layers) {
  if (layers <= 0) return "";
  return layers == 1 ? "t" : "t*" + std::to_string(layers);
}

}  // namespace

Expected<std::vector<int64_t>> parse_pipeline_layout(std::string_view text) {
  if (text.empty()) return Error{"the layout is empty; " + std::string(kSyntax)};
  auto symbols = LayoutReader(text).symbols();
  if (!symbols) return symbols.error();
  const std::string& s = *symbols;
  size_t embeddings = 0, heads = 0;
  for (char c : s) {
    embeddings += c == 'E';
    heads += c == 'L';
  }
  if (embeddings != 1)
    return Error{"E (the embedding) appears " + std::to_string(embeddings) + " times; it must appear once"};
  if (heads != 1)
    return Error{"L (the output layer and loss) appears " + std::to_string(heads) +
                 " times; it must appear once"};
  if (s.front() != 'E')
    return Error{"the layout must start with E: the embedding is the model's first layer"};
  if (s.back() != 'L')
    return Error{"the layout must end with L: the output layer and loss are the model's last"};
  std::vector<int64_t> chunks{0};
  for (char c : s) {
    if (c == '|') chunks.push_back(0);
    if (c == 't') ++chunks.back();
  }
  return chunks;
}

std::string pipeline_layout_string(const std::vector<int64_t>& chunk_layers) {
  const size_t n = chunk_layers.size();
  if (n == 0) return "EL";
  if (n == 1) return "E" + layers_text(chunk_layers[0]) + "L";
  std::string text = "E" + layers_text(chunk_layers[0]) + "|";
  // Middle chunks: runs of three or more equal ones as one group.
  for (size_t i = 1; i + 1 < n;) {
    size_t j = i;
    while (j + 1 < n - 1 && chunk_layers[j + 1] == chunk_layers[i]) ++j;
    const size_t run = j - i + 1;
    if (run >= 3) {
      text += "(" + layers_text(chunk_layers[i]) + "|)*" + std::to_string(run);
    } else {
      for (size_t k = i; k <= j; ++k) text += layers_text(chunk_layers[k]) + "|";
    }
    i = j + 1;
  }
  return text + layers_text(chunk_layers[n - 1]) + "L";
}

}  // namespace pipescope::planner
