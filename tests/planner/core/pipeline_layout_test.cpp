// Megatron-LM's layout strings (pipeline_layout.h): every syntax element, every error, and the
// strings pipescope writes read back to the same chunks.
#include "pipescope/planner/pipeline_layout.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pipescope::planner {
namespace {

using Chunks = std::vector<int64_t>;

Chunks parsed(const std::string& text) {
  auto chunks = parse_pipeline_layout(text);
  EXPECT_TRUE(chunks.ok()) << text << ": " << chunks.error().message;
  return chunks.ok() ? *chunks : Chunks{};
}

std::string refusal(const std::string& text) {
  auto chunks = parse_pipeline_layout(text);
  return chunks.ok() ? "(parsed)" : chunks.error().message;
}

TEST(PipelineLayout, ReadsLettersChunksAndRepetitions) {
  EXPECT_EQ(parsed("EttL"), (Chunks{2}));
  EXPECT_EQ(parsed("Et|tt|tL"), (Chunks{1, 2, 1}));
  EXPECT_EQ(parsed("Et*4|t*5|t*5|t*2L"), (Chunks{4, 5, 5, 2}));
  EXPECT_EQ(parsed("E|t*3|tL"), (Chunks{0, 3, 1}));
  EXPECT_EQ(parsed("E|(t|)*3L"), (Chunks{0, 1, 1, 1, 0}));
  EXPECT_EQ(parsed("E|(tt|)*2t*2L"), (Chunks{0, 2, 2, 2}));
  EXPECT_EQ(parsed("E|(t*3|)*2L"), (Chunks{0, 3, 3, 0}));
  EXPECT_EQ(parsed("Et,t|t,tL"), (Chunks{2, 2}));  // commas are cosmetic
  EXPECT_EQ(parsed("Et|*3tL"), (Chunks{1, 0, 0, 1}));
  // Megatron-LM's example without its multi-token-prediction chunk.
  EXPECT_EQ(parsed("Ettt|(tt|)*29L").size(), 31u);
  // LLaMA-3 405B as Meta split it: the embedding and the output layer in chunks of their own.
  const Chunks meta = parsed("E|(t|)*126L");
  ASSERT_EQ(meta.size(), 128u);
  EXPECT_EQ(meta.front(), 0);
  EXPECT_EQ(meta.back(), 0);
  int64_t total = 0;
  for (int64_t layers : meta) total += layers;
  EXPECT_EQ(total, 126);
}

TEST(PipelineLayout, RefusesWhatItCannotReadNamingIt) {
  EXPECT_EQ(
      refusal(""),
      "the layout is empty; a layout is E (embedding), t (decoder layer), L (output layer and loss), '|' "
      "between chunks, X*N and (...)*N");
  EXPECT_EQ(refusal("Ettt|m|L"),
            "'m' at position 6: pipescope does not model multi-token-prediction layers; plan the model "
            "without them");
  EXPECT_EQ(
      refusal("Etx|tL"),
      "'x' at position 3 is not part of a layout; a layout is E (embedding), t (decoder layer), L (output "
      "layer and loss), '|' between chunks, X*N and (...)*N");
  EXPECT_EQ(refusal("Et T|tL").substr(0, 22), "' ' at position 3 is n");
  EXPECT_EQ(refusal("Et*|tL"), "'*' at position 3 is not followed by a count");
  EXPECT_EQ(refusal("E|(t|L"), "a '(' is not closed");
  EXPECT_EQ(refusal("E|t)|tL"), "')' at position 4 closes no '('");
  EXPECT_EQ(refusal("E|((t|)*2|)*2L"), "'(' at position 4 is inside another group; groups do not nest");
  EXPECT_EQ(refusal("E|(t|)L"), "the group opened at position 3 needs a count: (...)*N");
  EXPECT_EQ(refusal("tE|tL"), "the layout must start with E: the embedding is the model's first layer");
  EXPECT_EQ(refusal("Et|Lt"), "the layout must end with L: the output layer and loss are the model's last");
  EXPECT_EQ(refusal("EEt|tL"), "E (the embedding) appears 2 times; it must appear once");
  EXPECT_EQ(refusal("Et|t"), "L (the output layer and loss) appears 0 times; it must appear once");
  EXPECT_EQ(refusal("Et*99999999999|tL").substr(0, 32), "the repetition at position 3 is ");
  EXPECT_EQ(refusal("E(tttt|)*20000L").substr(0, 28), "the layout expands to more t");
}

TEST(PipelineLayout, WritesWhatItReadsBack) {
  EXPECT_EQ(pipeline_layout_string({4, 5, 5, 2}), "Et*4|t*5|t*5|t*2L");
  EXPECT_EQ(pipeline_layout_string({0, 3, 1}), "E|t*3|tL");
  EXPECT_EQ(pipeline_layout_string({5}), "Et*5L");
  Chunks meta(128, 1);
  meta.front() = meta.back() = 0;
  EXPECT_EQ(pipeline_layout_string(meta), "E|(t|)*126L");
  for (const Chunks& chunks : {Chunks{4, 5, 5, 2}, Chunks{0, 3, 1}, Chunks{5}, meta, Chunks{1, 0, 0, 0, 2},
                               Chunks{2, 3, 3, 3, 2, 2, 2, 1}, Chunks{0, 0}, Chunks{3, 4, 4, 4, 4}}) {
    EXPECT_EQ(parsed(pipeline_layout_string(chunks)), chunks) << pipeline_layout_string(chunks);
  }
}

}  // namespace
}  // namespace pipescope::planner
