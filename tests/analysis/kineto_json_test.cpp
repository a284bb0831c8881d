// The windowed Kineto reader: whatever the window size, it hands on the same events as a read
// of the whole document at once, and fails the same way on a damaged one.
#include "kineto_json.h"

#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstddef>
#include <iterator>

#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include "kineto_text.h"
#include "trace_test_support.h"

namespace pipescope::analysis::kineto {
namespace {

const std::string kData = std::string(PIPESCOPE_SOURCE_DIR) + "/tests/data/kineto/";

std::string describe(const Event& e) {
  std::ostringstream out;
  out << e.cat << '|' << e.name << '|' << e.ph << '|' << (e.ts_us ? std::to_string(*e.ts_us) : "-") << '|'
      << std::to_string(e.dur_us) << '|' << e.tid << '|';
  const EventArgs& a = e.args;
  for (const auto* n :
       {&a.device, &a.stream, &a.bytes, &a.registers_per_thread, &a.shared_memory, &a.in_msg_nelems,
        &a.out_msg_nelems, &a.group_size, &a.memory_bytes, &a.device_type, &a.device_id, &a.address})
    out << (*n ? std::to_string(**n) : "-") << ',';
  out << a.correlation << ',' << a.external_id << ',' << a.grid[0] << 'x' << a.grid[1] << 'x' << a.grid[2]
      << ',' << a.block[0] << 'x' << a.block[1] << 'x' << a.block[2] << ',' << a.collective_name << ','
      << a.dtype << ',' << a.group_name << ",[";
  for (int32_t r : a.group_ranks) out << r << ' ';
  out << "]," << a.input_dims_count << ',' << a.input_type_count;
  for (size_t i = 0; i < kTensorsRead; ++i) {
    out << ',' << (a.input_elements[i] ? std::to_string(*a.input_elements[i]) : "-") << ','
        << a.input_type[i].value_or("-");
  }
  return out.str();
}

struct Recorded : DocumentHandler {
  bool info_seen = false;
  std::string info;
  std::vector<std::string> events;
  Status on_distributed_info(const DistributedInfo& d) override {
    EXPECT_TRUE(events.empty()) << "distributedInfo must come before the events";
    info_seen = true;
    info = (d.rank ? std::to_string(*d.rank) : "-") + "/" +
           (d.world_size ? std::to_string(*d.world_size) : "-") + "/" + d.backend;
    return {};
  }
  void on_event(const Event& e) override { events.push_back(describe(e)); }
};

struct Outcome {
  bool ok = false;
  std::string error;
  Recorded recorded;
};

Outcome read(const std::string& text, size_t window_bytes) {
  DocumentText document = DocumentText::copy_of(text);
  Outcome outcome;
  ReaderOptions options;
  options.window_bytes = window_bytes;
  const Status s = read_document(document, "doc.json", outcome.recorded, options);
  outcome.ok = s.ok();
  if (!s) outcome.error = s.error().message;
  return outcome;
}

std::string inflated(const std::string& path) {
  auto text = DocumentText::load(path);
  EXPECT_TRUE(text.ok()) << text.error().message;
  EXPECT_TRUE(text && text->ensure(text->capacity()));
  return text ? std::string(text->data(), text->size()) : std::string();
}

// Every construct a cut can fall into: brackets, braces, commas and quotes inside strings,
// escapes (a quote, a backslash before a closing quote, a Unicode escape), nested and deep
// arrays, elements that are not events, numbers and words, blank lines, CRLF, and
// distributedInfo after the events.
const char* const kTricky =
    R"JSON({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "H100 [SXM], {x}"}],
  "traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "void k<float, 4>(\"a\", {b}, [c])\\", "pid": 0, "tid": 7,
   "ts": 1000.5, "dur": 12, "args": {"device": 0, "stream": 7, "correlation": 77, "grid": [4, 1, 1],
   "block": [512, 1, 1], "registers per thread": 32, "shared memory": 1024}},
  12345678901234567890, "a string ], {", null, true, [1, [2, [3]]], {},
  {"ph":"X","cat":"user_annotation","name":"nccl:all_gather","pid":1,"tid":"thread \u00e9 1","ts":1100,"dur":50,"args":{"External id":9,"Input Dims":[[1024, 8], [], [[1]]],"Input type":["c10::BFloat16", 3, "float"]}},
  {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "tid": 1, "ts": 1200, "dur": 5,
   "args": {"Collective name": "all_gather", "dtype": "BFloat16", "In msg nelems": 8192,
            "Out msg nelems": 65536, "Group size": 8, "Process Group Name": "3",
            "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]", "External id": "e-9"}},

  {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "tid": 1, "ts": 1300,
   "args": {"Device Type": 1, "Device Id": 0, "Addr": 94489280512, "Bytes": -2048}},
  {"ph": "X", "cat": "kernel", "name": "k", "ts": "not a number", "args": {"grid": "4"}},)JSON"
    "\r\n"
    R"JSON(  {"ph": "X", "cat": "cpu_op", "name": "c10d::_allgather_base_", "tid": 1, "ts": 1.5e3, "dur": 1e1,
   "args": {"Input Dims": [[65536], [8192]], "Input type": ["c10::BFloat16", "c10::BFloat16"],
            "Process Group Ranks": [0, 1, 2.5]}}
  ],
  "traceName": "x\"]}", "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8}
})JSON";

TEST(KinetoJson, EveryWindowSizeReadsWhatTheWholeDocumentHolds) {
  const std::string text = kTricky;
  const Outcome whole = read(text, text.size() * 2);
  ASSERT_TRUE(whole.ok) << whole.error;
  EXPECT_EQ(whole.recorded.info, "3/8.000000/nccl");
  ASSERT_EQ(whole.recorded.events.size(), 7u);
  EXPECT_NE(whole.recorded.events[0].find("void k<float, 4>(\"a\", {b}, [c])\\"), std::string::npos);
  for (size_t window = 1; window <= text.size(); ++window) {
    const Outcome cut = read(text, window);
    ASSERT_TRUE(cut.ok) << "window " << window << ": " << cut.error;
    EXPECT_EQ(cut.recorded.events, whole.recorded.events) << "window " << window;
    EXPECT_EQ(cut.recorded.info, whole.recorded.info);
  }
}

TEST(KinetoJson, EventFieldsAreReadAsTheyAreWritten) {
  const Outcome whole = read(kTricky, 1 << 20);
  ASSERT_TRUE(whole.ok) << whole.error;
  const auto& events = whole.recorded.events;
  // The kernel: dims, registers, shared memory.
  EXPECT_NE(events[0].find("|1000.500000|12.000000|7|0.000000,7.000000,-,32.000000,1024.000000,"),
            std::string::npos)
      << events[0];
  EXPECT_NE(events[0].find("77,0,4x1x1,512x1x1,"), std::string::npos) << events[0];
  // The annotation: a string thread id (hashed, not 0), dims of the first two tensors (an empty
  // list is not a tensor's size), a type that is not a string.
  EXPECT_EQ(events[2].find("|0|"), std::string::npos) << events[2];
  EXPECT_NE(events[2].find(",3,3,8192,c10::BFloat16,-,-"), std::string::npos) << events[2];
  // record_param_comms: the ranks from their text.
  EXPECT_NE(events[3].find("all_gather,BFloat16,3,[0 1 2 3 4 5 6 7 ]"), std::string::npos) << events[3];
  // The allocation's address beyond 32 bits; a release as negative bytes.
  EXPECT_NE(events[4].find("-2048.000000,1.000000,0.000000,94489280512.000000,"), std::string::npos)
      << events[4];
  // Not a number: no time. A list of ranks with a fraction in it: no ranks.
  EXPECT_NE(events[5].find("|k|X|-|"), std::string::npos) << events[5];
  EXPECT_NE(events[6].find("|1500.000000|10.000000|"), std::string::npos) << events[6];
  EXPECT_NE(events[6].find(",[],2,2,65536,c10::BFloat16,8192,c10::BFloat16"), std::string::npos) << events[6];
}

TEST(KinetoJson, RealTracesReadTheSameInWindowsOfAnySize) {
  for (const char* file : {"rank-0.json.gz", "rank-1.json.gz"}) {
    const std::string text = inflated(kData + file);
    ASSERT_GT(text.size(), 1'000'000u);
    const Outcome whole = read(text, text.size());
    ASSERT_TRUE(whole.ok) << whole.error;
    EXPECT_GT(whole.recorded.events.size(), 1000u);
    for (size_t window : {700, 4096, 65'537, 1'000'003}) {  // 700: smaller than many events
      const Outcome cut = read(text, window);
      ASSERT_TRUE(cut.ok) << file << " window " << window << ": " << cut.error;
      EXPECT_EQ(cut.recorded.events, whole.recorded.events) << file << " window " << window;
    }
  }
}

TEST(KinetoJson, ADocumentCutShortAnywhereIsRefused) {
  const std::string text = kTricky;
  for (size_t length = 0; length + 1 < text.size(); ++length) {
    for (size_t window : {size_t{5}, text.size()}) {
      const Outcome cut = read(text.substr(0, length), window);
      EXPECT_FALSE(cut.ok) << "cut at " << length << ", window " << window;
    }
  }
}

// Damaged documents (bytes replaced, removed, inserted): a window's cut never changes whether
// the document is read, nor what a document that is read hands on.
TEST(KinetoJson, DamageIsFoundTheSameWayInWindowsAsWhole) {
  const std::string text = kTricky;
  const std::string alphabet = "{}[],:\"\\ 0e-.tnx";
  std::mt19937 random(20261127);
  for (int trial = 0; trial < 1000; ++trial) {
    std::string damaged = text;
    const size_t at = random() % damaged.size();
    const char c = alphabet[random() % alphabet.size()];
    switch (trial % 3) {
      case 0: damaged[at] = c; break;
      case 1: damaged.erase(at, 1); break;
      default: damaged.insert(damaged.begin() + static_cast<std::ptrdiff_t>(at), c); break;
    }
    const Outcome whole = read(damaged, damaged.size() * 2);
    for (size_t window : {size_t{3}, size_t{64}}) {
      const Outcome cut = read(damaged, window);
      ASSERT_EQ(cut.ok, whole.ok) << "trial " << trial << " window " << window << ": " << cut.error << " / "
                                  << whole.error << "\n"
                                  << damaged;
      if (cut.ok) {
        EXPECT_EQ(cut.recorded.events, whole.recorded.events) << "trial " << trial << " window " << window;
      }
    }
  }
}

TEST(KinetoJson, WhatIsNotAKinetoDocumentSaysWhy) {
  EXPECT_NE(read("this is not json", 64).error.find("doc.json is not JSON"), std::string::npos);
  EXPECT_NE(read("[1, 2]", 64).error.find("is not JSON"), std::string::npos);
  EXPECT_NE(read(R"({"schemaVersion": 1})", 64).error.find("has no traceEvents array"), std::string::npos);
  EXPECT_NE(read(R"({"traceEvents": {}})", 64).error.find("has no traceEvents array"), std::string::npos);
  EXPECT_NE(read(R"({"traceEvents": []} x)", 64).error.find("is not JSON"), std::string::npos);
  // Words and numbers in the fields that are read are checked.
  for (const char* damaged :
       {R"({"traceEvents": [{"ts": 1}, {"ts": tru}]})", R"({"traceEvents": [{"ts": 1.2.3}]})",
        R"({"traceEvents": [{"ts": 1, "cat": nul}]})"}) {
    for (size_t window : {size_t{4}, size_t{100}}) {
      EXPECT_NE(read(damaged, window).error.find("is not JSON"), std::string::npos)
          << damaged << " " << window;
    }
  }
  const Outcome empty = read(R"({"traceEvents": []})", 64);
  EXPECT_TRUE(empty.ok) << empty.error;
  EXPECT_TRUE(empty.recorded.info_seen);
  EXPECT_EQ(empty.recorded.info, "-/-/");
}

// A worker's gzip'ed documents inflate into the pages of the one before: a larger one grows them,
// a smaller one reads no byte of the last (its padding reads as zeros), and a refused one leaves
// them to the next. Each reads as it does loaded alone.
TEST(KinetoJson, DocumentsInflatedIntoTheSameMemoryOneAfterAnotherReadAsAlone) {
  trace::test::ScratchDir dir;
  const std::string small = dir.file("small.json.gz");
  gzFile out = gzopen(small.c_str(), "wb");
  ASSERT_NE(out, nullptr);
  const std::string tricky = kTricky;
  ASSERT_EQ(gzwrite(out, tricky.data(), static_cast<unsigned>(tricky.size())),
            static_cast<int>(tricky.size()));
  ASSERT_EQ(gzclose(out), Z_OK);
  const std::string whole = trace::test::read_text(kData + "rank-0.json.gz");
  const std::string cut = dir.file("cut.json.gz");
  std::ofstream(cut, std::ios::binary) << whole.substr(0, whole.size() / 2);

  InflateMemory memory;
  std::vector<const char*> lent_at;
  for (const std::string& path : {small, kData + "rank-0.json.gz", cut, kData + "rank-1.json.gz", small}) {
    auto alone = DocumentText::load_whole(path);
    auto lent = DocumentText::load_whole(path, &memory);
    ASSERT_EQ(lent.ok(), alone.ok()) << path;
    if (!alone) {
      EXPECT_EQ(lent.error().message, alone.error().message);
      EXPECT_NE(alone.error().message.find("is truncated"), std::string::npos) << alone.error().message;
      continue;
    }
    lent_at.push_back(lent->data());
    ASSERT_EQ(std::string_view(lent->data(), lent->size()), std::string_view(alone->data(), alone->size()))
        << path;
    EXPECT_EQ(std::string_view(lent->data() + lent->size(), DocumentText::kPaddingBytes + 2),
              std::string(DocumentText::kPaddingBytes + 2, '\0'))
        << path;
    Recorded from_alone, from_lent;
    ASSERT_TRUE(read_document(*alone, path, from_alone).ok()) << path;
    ASSERT_TRUE(read_document(*lent, path, from_lent).ok()) << path;
    EXPECT_GT(from_lent.events.size(), 5u);
    EXPECT_EQ(from_lent.events, from_alone.events) << path;
    EXPECT_EQ(from_lent.info, from_alone.info) << path;
  }
  // The last document, the smallest, took the pages the larger one before it gave back.
  ASSERT_EQ(lent_at.size(), 4u);
  EXPECT_EQ(lent_at[3], lent_at[2]);
}

void write_gzip(const std::string& path, const std::string& text) {
  gzFile out = gzopen(path.c_str(), "wb");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(gzwrite(out, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(out), Z_OK);
}

// A document of `events` copies of kTricky's events, several MiB: many of a stream's chunks. Its
// distributedInfo comes first, as Kineto writes it (after the events it takes a first pass).
std::string many_events(size_t events) {
  const std::string tricky = kTricky;
  const size_t open = tricky.find("\"traceEvents\": [") + 16;
  const size_t close = tricky.find("  ],\n  \"traceName\"") + 2;
  const std::string body = tricky.substr(open, close - open);
  std::string text =
      R"({"distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8}, "traceEvents": [)";
  for (size_t i = 0; i < events; ++i) text += (i == 0 ? "" : ",") + body;
  return text + "]}";
}

Recorded read_all(DocumentText& text, const std::string& origin, size_t window_bytes, Status& status) {
  Recorded recorded;
  ReaderOptions options;
  options.window_bytes = window_bytes;
  status = read_document(text, origin, recorded, options);
  return recorded;
}

// many_events(`events`) gzip'ed into `dir`, and what a read of its whole text hands on.
struct GzipDocument {
  std::string text;
  std::string path;
  Recorded whole;
};
GzipDocument gzip_many_events(trace::test::ScratchDir& dir, size_t events) {
  GzipDocument document{many_events(events), dir.file("many.json.gz"), {}};
  write_gzip(document.path, document.text);
  DocumentText copy = DocumentText::copy_of(document.text);
  Status status;
  document.whole = read_all(copy, document.path, 1 << 20, status);
  EXPECT_TRUE(status.ok()) << status.error().message;
  return document;
}

// A gzip'ed document is inflated as it is read where the build has ISA-L: whatever the window,
// it hands on what the whole document does, and all but the first few windows' worth of it is
// inflated into pages moved up from behind the reader.
TEST(KinetoJson, AStreamedDocumentReadsAsTheWholeOne) {
  trace::test::ScratchDir dir;
  const GzipDocument document = gzip_many_events(dir, 5000);
  const std::string& text = document.text;
  const std::string& path = document.path;
  const Recorded& whole = document.whole;
  ASSERT_GT(text.size(), size_t{6} << 20);
  ASSERT_EQ(whole.events.size(), 5000u * 7);
  Status status;
  for (const size_t window : {size_t{700}, size_t{65'537}, size_t{1} << 20, size_t{4} << 20}) {
    auto streamed = DocumentText::load(path);
    ASSERT_TRUE(streamed.ok()) << streamed.error().message;
    const Recorded read = read_all(*streamed, path, window, status);
    ASSERT_TRUE(status.ok()) << "window " << window << ": " << status.error().message;
    EXPECT_EQ(read.events, whole.events) << "window " << window;
    EXPECT_EQ(read.info, whole.info);
#ifdef PIPESCOPE_HAVE_ISAL
    // Held at once: the window behind the reader, two ahead, and a chunk or two of the stream's.
    const size_t held = 3 * window + (size_t{3} << 20);
    EXPECT_GE(streamed->reused_bytes(), text.size() > held ? text.size() - held : 0) << "window " << window;
#endif
  }
}

// Damage met partway through a streamed document is named as gzip's, as a whole document's is;
// a file the stream cannot take as one member of the size its trailer states (more members,
// zeros after it) is left to load_whole, which reads it.
TEST(KinetoJson, AStreamedDocumentThatIsDamagedOrNotOneMemberSaysSo) {
  trace::test::ScratchDir dir;
  const std::string text = many_events(1000);
  const std::string path = dir.file("many.json.gz");
  write_gzip(path, text);
  const std::string gz = trace::test::read_text(path);
  auto read_file = [&](const std::string& bytes, bool whole, std::string& error) {
    const std::string damaged = dir.file("damaged.json.gz");
    std::ofstream(damaged, std::ios::binary | std::ios::trunc) << bytes;
    auto document = whole ? DocumentText::load_whole(damaged) : DocumentText::load(damaged);
    if (!document) {
      error = document.error().message;
      return false;
    }
    Status status;
    read_all(*document, damaged, 1 << 16, status);
    error = status.ok() ? "" : status.error().message;
    return status.ok() && !document->stream_gave_up();
  };
  std::string error;
  for (const double at : {0.1, 0.5, 0.97}) {
    EXPECT_FALSE(
        read_file(gz.substr(0, static_cast<size_t>(at * static_cast<double>(gz.size()))), false, error));
    EXPECT_NE(error.find("is truncated: its gzip data ends early"), std::string::npos) << at << ": " << error;
  }
  std::string flipped = gz;
  flipped[gz.size() - 6] = static_cast<char>(flipped[gz.size() - 6] ^ 0x55);  // the CRC-32
  EXPECT_FALSE(read_file(flipped, false, error));
  EXPECT_NE(error.find("is corrupt gzip data"), std::string::npos) << error;

  // A read that stops early (here its handler refuses the document at once) still meets the
  // check at the stream's end, which names the damage; the rest is inflated into the same few
  // pages, not kept.
  struct Refusing : DocumentHandler {
    Status on_distributed_info(const DistributedInfo&) override { return Error("refused"); }
    void on_event(const Event&) override {}
  };
  const std::string big = many_events(5000);
  write_gzip(path, big);
  std::string big_gz = trace::test::read_text(path);
  big_gz[big_gz.size() - 6] = static_cast<char>(big_gz[big_gz.size() - 6] ^ 0x55);
  const std::string damaged = dir.file("big.json.gz");
  std::ofstream(damaged, std::ios::binary) << big_gz;
  auto document = DocumentText::load(damaged);
  ASSERT_TRUE(document.ok());
  Refusing refusing;
  const Status status = read_document(*document, damaged, refusing);
  ASSERT_FALSE(status.ok());
#ifdef PIPESCOPE_HAVE_ISAL
  EXPECT_NE(status.error().message.find("is corrupt gzip data"), std::string::npos) << status.error().message;
  EXPECT_GE(document->reused_bytes(), big.size() - (size_t{3} << 20));
#else
  EXPECT_EQ(status.error().message, "refused");
#endif
  write_gzip(dir.file("head.gz"), text.substr(0, text.size() / 2));
  write_gzip(dir.file("tail.gz"), text.substr(text.size() / 2));
  const std::string members =
      trace::test::read_text(dir.file("head.gz")) + trace::test::read_text(dir.file("tail.gz"));
  for (const std::string& file : {members, gz + std::string(16, '\0')}) {
    EXPECT_FALSE(read_file(file, false, error)) << "the stream cannot take it as one member";
    EXPECT_TRUE(read_file(file, true, error)) << error;
  }
}

#ifdef PIPESCOPE_HAVE_ISAL
// From now on every mremap of this process fails with ENOMEM, as a move does when the process's
// mapping count is at its limit (a seccomp filter: the calling process alone, for good).
bool fail_every_mremap() {
  sock_filter program[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mremap, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOMEM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog filter{static_cast<unsigned short>(std::size(program)), program};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &filter) == 0 && mremap(nullptr, 0, 0, 0) == MAP_FAILED &&
         errno == ENOMEM;
}
#endif

// Where a chunk cannot be moved ahead (mremap fails: the process's mapping count at its limit),
// the stream gives back the pages behind the reader instead, and the document still reads as the
// whole one.
TEST(KinetoJson, AStreamWhoseMovesFailGivesPagesBackAndReadsTheSame) {
#if !defined(PIPESCOPE_HAVE_ISAL) || !defined(__x86_64__)
  GTEST_SKIP() << "this build inflates gzip'ed documents whole (no ISA-L): nothing is moved";
#else
  trace::test::ScratchDir dir;
  const GzipDocument document = gzip_many_events(dir, 5000);
  const std::string& path = document.path;
  const Recorded& whole = document.whole;
  // In a child, whose system calls the test may filter: exit 0 when the read matched and moved
  // nothing, 2 when the filter could not be set, 1 otherwise.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (!fail_every_mremap()) _exit(2);
    auto streamed = DocumentText::load(path);
    if (!streamed.ok()) _exit(1);
    Status read_status;
    const Recorded read = read_all(*streamed, path, 1 << 20, read_status);
    const bool same = read_status.ok() && read.events == whole.events && read.info == whole.info;
    _exit(same && streamed->reused_bytes() == 0 ? 0 : 1);
  }
  int wait_status = 0;
  ASSERT_EQ(waitpid(child, &wait_status, 0), child);
  ASSERT_TRUE(WIFEXITED(wait_status));
  if (WEXITSTATUS(wait_status) == 2) GTEST_SKIP() << "this kernel refuses a seccomp filter here";
  EXPECT_EQ(WEXITSTATUS(wait_status), 0) << "the read with its moves failing differed, or moved a chunk";
#endif
}

}  // namespace
}  // namespace pipescope::analysis::kineto
