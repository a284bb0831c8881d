// Holds docs/trace-format.md to the code: the record tables to record_schemas(), the header and
// payload tables to the structs of format.h, the enumeration tables to the enums, and the
// worked example's hex dump to what TraceDecoder makes of it. A reader written from the doc
// alone must get the same bytes that pipescope writes.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "pipescope/trace/crc32c.h"
#include "pipescope/trace/format.h"
#include "pipescope/trace/process_info.h"
#include "pipescope/trace/record_schema.h"
#include "pipescope/trace/records.h"
#include "pipescope/trace/trace_summary.h"

namespace pipescope::trace {
namespace {

constexpr const char* kDocPath = PIPESCOPE_SOURCE_DIR "/docs/trace-format.md";

// One `### ...` section: its heading, the data rows of the first table under it (cells
// trimmed, header and separator rows dropped), and its fenced code blocks.
struct Section {
  std::string heading;
  int line = 0;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> code_blocks;
};

std::string trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  const size_t end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

std::vector<std::string> split_row(const std::string& line) {
  std::vector<std::string> cells;
  std::string body = trim(line);
  if (!body.empty() && body.front() == '|') body.erase(0, 1);
  if (!body.empty() && body.back() == '|') body.pop_back();
  std::stringstream in(body);
  std::string cell;
  while (std::getline(in, cell, '|')) cells.push_back(trim(cell));
  return cells;
}

std::string read_doc() {
  std::ifstream in(kDocPath);
  if (!in) ADD_FAILURE() << "cannot read " << kDocPath;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<Section> parse_sections(const std::string& doc) {
  std::vector<Section> sections;
  std::stringstream in(doc);
  std::string line;
  int number = 0;
  bool in_code = false;
  bool table_done = false;  // the first table of the current section has ended
  bool in_table = false;
  int table_row = 0;
  std::string code;
  while (std::getline(in, line)) {
    ++number;
    if (line.rfind("```", 0) == 0) {
      if (in_code && !sections.empty()) sections.back().code_blocks.push_back(code);
      in_code = !in_code;
      code.clear();
      continue;
    }
    if (in_code) {
      code += line + "\n";
      continue;
    }
    if (line.rfind("#", 0) == 0) {
      if (in_table) table_done = true;
      in_table = false;
      if (line.rfind("### ", 0) == 0) {
        sections.push_back(Section{trim(line.substr(4)), number, {}, {}});
        table_done = false;
        table_row = 0;
      } else {
        table_done = true;  // a higher-level heading ends the section
        sections.push_back(Section{"", number, {}, {}});
      }
      continue;
    }
    const bool is_row = trim(line).rfind("|", 0) == 0;
    if (is_row && !table_done && !sections.empty()) {
      in_table = true;
      if (table_row++ >= 2) sections.back().rows.push_back(split_row(line));
    } else if (!is_row && in_table) {
      in_table = false;
      table_done = true;
    }
  }
  return sections;
}

const std::vector<Section>& doc_sections() {
  static const std::vector<Section> sections = parse_sections(read_doc());
  return sections;
}

const Section* find_section(const std::string& heading) {
  for (const Section& s : doc_sections()) {
    if (s.heading == heading) return &s;
  }
  return nullptr;
}

std::optional<uint64_t> parse_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  size_t used = 0;
  try {
    const uint64_t value = std::stoull(text, &used, 0);  // decimal, or 0x hex
    if (used != text.size()) return std::nullopt;
    return value;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// ---- record tables -----------------------------------------------------------------------

struct RecordSection {
  std::string name;
  uint64_t kind = 0;
  uint64_t size = 0;
  const Section* section = nullptr;
};

std::vector<RecordSection> record_sections() {
  static const std::regex heading(R"(Record (\S+) \(kind (\d+), (\d+) bytes\))");
  std::vector<RecordSection> out;
  for (const Section& s : doc_sections()) {
    if (s.heading.rfind("Record ", 0) != 0) continue;
    std::smatch m;
    RecordSection r;
    r.section = &s;
    if (std::regex_match(s.heading, m, heading)) {
      r.name = m[1];
      r.kind = std::stoull(m[2]);
      r.size = std::stoull(m[3]);
    }
    out.push_back(r);
  }
  return out;
}

TEST(TraceFormatDoc, EveryRecordKindHasOneSectionWithItsKindNumberAndSize) {
  const std::vector<RecordSection> sections = record_sections();
  for (const RecordSchema& schema : record_schemas()) {
    int found = 0;
    for (const RecordSection& r : sections) {
      if (r.name != schema.name) continue;
      ++found;
      EXPECT_EQ(r.kind, static_cast<uint64_t>(schema.kind)) << "### Record " << schema.name;
      EXPECT_EQ(r.size, schema.size_bytes) << "### Record " << schema.name;
    }
    EXPECT_EQ(found, 1) << "docs/trace-format.md needs exactly one heading `### Record " << schema.name
                        << " (kind " << static_cast<int>(schema.kind) << ", " << schema.size_bytes
                        << " bytes)`";
  }
}

TEST(TraceFormatDoc, EveryRecordTableMatchesTheCode) {
  for (const RecordSection& r : record_sections()) {
    const RecordSchema* schema = nullptr;
    for (const RecordSchema& s : record_schemas()) {
      if (r.name == s.name) schema = &s;
    }
    if (schema == nullptr) continue;  // reported by NoRecordSectionNamesAnUnknownRecord
    SCOPED_TRACE("### Record " + r.name + " (doc line " + std::to_string(r.section->line) + ")");
    const auto& rows = r.section->rows;
    ASSERT_EQ(rows.size(), schema->fields.size()) << "one table row per field of the record";
    for (size_t i = 0; i < rows.size(); ++i) {
      const FieldDesc& field = schema->fields[i];
      ASSERT_EQ(rows[i].size(), 4u) << "row " << i << ": | offset | type | field | meaning |";
      EXPECT_EQ(rows[i][0], std::to_string(field.offset)) << "offset of " << field.name;
      EXPECT_EQ(rows[i][1], field_type_name(field.type)) << "type of " << field.name;
      EXPECT_EQ(rows[i][2], field.name) << "field at offset " << field.offset;
      EXPECT_FALSE(rows[i][3].empty()) << "meaning of " << field.name;
    }
  }
}

TEST(TraceFormatDoc, NoRecordSectionNamesAnUnknownRecord) {
  for (const RecordSection& r : record_sections()) {
    EXPECT_FALSE(r.name.empty()) << "doc line " << r.section->line << ": `### " << r.section->heading
                                 << "` is not of the form `### Record <name> (kind <N>, <S> bytes)`";
    if (r.name.empty()) continue;
    bool known = false;
    for (const RecordSchema& s : record_schemas()) known = known || r.name == s.name;
    EXPECT_TRUE(known) << "doc line " << r.section->line << ": no record named `" << r.name
                       << "` in record_schema.cpp";
  }
}

// ---- fixed structures of format.h ------------------------------------------------------------

struct ExpectedRow {
  std::string name;
  size_t offset;
  std::string type;
};

template <class T>
std::string type_name_of() {
  if constexpr (std::is_same_v<T, uint8_t>) return "u8";
  if constexpr (std::is_same_v<T, uint16_t>) return "u16";
  if constexpr (std::is_same_v<T, uint32_t>) return "u32";
  if constexpr (std::is_same_v<T, uint64_t>) return "u64";
  if constexpr (std::is_same_v<T, int32_t>) return "i32";
  if constexpr (std::is_array_v<T>) return "u8[" + std::to_string(sizeof(T)) + "]";
  return "?";
}

#define ROW(Struct, member) \
  ExpectedRow { #member, offsetof(Struct, member), type_name_of < decltype(Struct::member)>() }

// The table's first rows must be exactly `expected`, in order; rows after them describe
// variable-length parts (host name, text) and are not checked here.
void expect_table(const std::string& heading, size_t struct_size, const std::vector<ExpectedRow>& expected) {
  SCOPED_TRACE("### " + heading);
  const Section* section = find_section(heading);
  ASSERT_NE(section, nullptr) << "docs/trace-format.md has no heading `### " << heading << "`";
  ASSERT_GE(section->rows.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto& row = section->rows[i];
    ASSERT_EQ(row.size(), 4u) << "row " << i << ": | offset | type | field | meaning |";
    EXPECT_EQ(row[0], std::to_string(expected[i].offset)) << "offset of " << expected[i].name;
    EXPECT_EQ(row[1], expected[i].type) << "type of " << expected[i].name;
    EXPECT_EQ(row[2], expected[i].name) << "field at offset " << expected[i].offset;
    EXPECT_FALSE(row[3].empty()) << "meaning of " << expected[i].name;
  }
  EXPECT_NE(heading.find("(" + std::to_string(struct_size) + " bytes"), std::string::npos)
      << "the heading states the structure's size, " << struct_size << " bytes";
}

TEST(TraceFormatDoc, FileHeaderTableMatchesFormatH) {
  expect_table(
      "File header (64 bytes + host name)", sizeof(FileHeaderFixed),
      {ROW(FileHeaderFixed, magic), ROW(FileHeaderFixed, version_major), ROW(FileHeaderFixed, version_minor),
       ROW(FileHeaderFixed, header_bytes), ROW(FileHeaderFixed, pid), ROW(FileHeaderFixed, flags),
       ROW(FileHeaderFixed, start_realtime_ns), ROW(FileHeaderFixed, start_monotonic_ns),
       ROW(FileHeaderFixed, trace_clock), ROW(FileHeaderFixed, host_bytes), ROW(FileHeaderFixed, reserved0),
       ROW(FileHeaderFixed, reserved1), ROW(FileHeaderFixed, reserved2), ROW(FileHeaderFixed, crc32c),
       ExpectedRow{"host", sizeof(FileHeaderFixed), "u8[host_bytes]"}});
  EXPECT_EQ(offsetof(FileHeaderFixed, crc32c), kHeaderCrcCoveredBytes);
}

TEST(TraceFormatDoc, ChunkHeaderTableMatchesFormatH) {
  expect_table("Chunk header (24 bytes)", sizeof(ChunkHeader),
               {ROW(ChunkHeader, magic), ROW(ChunkHeader, type), ROW(ChunkHeader, flags),
                ROW(ChunkHeader, stored_bytes), ROW(ChunkHeader, raw_bytes), ROW(ChunkHeader, item_count),
                ROW(ChunkHeader, crc32c)});
  EXPECT_EQ(offsetof(ChunkHeader, crc32c), kChunkCrcCoveredHeaderBytes);
}

TEST(TraceFormatDoc, PayloadTablesMatchFormatH) {
  expect_table("String entry (8 bytes + text)", sizeof(StringEntryHeader),
               {ROW(StringEntryHeader, id), ROW(StringEntryHeader, length_bytes),
                ExpectedRow{"text", sizeof(StringEntryHeader), "u8[length_bytes]"}});
  expect_table("Process-info field header (8 bytes)", sizeof(ProcessFieldHeader),
               {ROW(ProcessFieldHeader, field), ROW(ProcessFieldHeader, reserved),
                ROW(ProcessFieldHeader, length_bytes)});
  expect_table("Clock anchor payload (32 bytes)", sizeof(ClockAnchorPayload),
               {ROW(ClockAnchorPayload, trace_clock_ns), ROW(ClockAnchorPayload, realtime_ns),
                ROW(ClockAnchorPayload, monotonic_ns), ROW(ClockAnchorPayload, uncertainty_ns)});
  expect_table("End payload (32 bytes)", sizeof(EndPayload),
               {ROW(EndPayload, records_written), ROW(EndPayload, records_dropped),
                ROW(EndPayload, chunks_written), ROW(EndPayload, end_realtime_ns)});
}

TEST(TraceFormatDoc, CommonRecordHeaderTableMatchesRecordsH) {
  expect_table("Common record header (4 bytes)", sizeof(RecordHeader),
               {ROW(RecordHeader, kind), ROW(RecordHeader, size_bytes)});
}

#undef ROW

// The device value has no struct: it is laid out by encode_process_info, so the doc's table
// is checked by reading an encoded device at the offsets it states.
TEST(TraceFormatDoc, DeviceValueTableDescribesWhatTheEncoderWrites) {
  DeviceInfo device;
  device.ordinal = -7;
  for (size_t i = 0; i < device.uuid.size(); ++i) device.uuid[i] = static_cast<uint8_t>(0xA0 + i);
  device.pci_domain = 0x11223344;
  device.pci_bus = 0x55;
  device.pci_device = 0x66;
  device.memory_bytes = 0x0123456789ABCDEFull;
  device.name = "NVIDIA H100 80GB HBM3";
  ProcessInfo info;
  info.devices.push_back(device);
  const std::vector<std::byte> payload = encode_process_info(info);
  ASSERT_EQ(payload.size(), sizeof(ProcessFieldHeader) + kDeviceFixedBytes + device.name.size());
  const std::byte* value = payload.data() + sizeof(ProcessFieldHeader);

  const std::string heading = "Device value (" + std::to_string(kDeviceFixedBytes) + " bytes + name)";
  const Section* section = find_section(heading);
  ASSERT_NE(section, nullptr) << "docs/trace-format.md has no heading `### " << heading << "`";
  std::set<std::string> seen;
  for (const auto& row : section->rows) {
    ASSERT_EQ(row.size(), 4u);
    const auto offset = parse_number(row[0]);
    ASSERT_TRUE(offset.has_value()) << "offset of " << row[2];
    const std::string& type = row[1];
    const std::string& name = row[2];
    seen.insert(name);
    auto load = [&](auto zero) {
      decltype(zero) v{};
      std::memcpy(&v, value + *offset, sizeof(v));
      return v;
    };
    if (name == "ordinal") {
      EXPECT_EQ(type, "i32");
      EXPECT_EQ(load(int32_t{}), device.ordinal);
    } else if (name == "uuid") {
      EXPECT_EQ(type, "u8[16]");
      EXPECT_EQ(std::memcmp(value + *offset, device.uuid.data(), 16), 0);
    } else if (name == "pci_domain") {
      EXPECT_EQ(type, "u32");
      EXPECT_EQ(load(uint32_t{}), device.pci_domain);
    } else if (name == "pci_bus") {
      EXPECT_EQ(type, "u32");
      EXPECT_EQ(load(uint32_t{}), device.pci_bus);
    } else if (name == "pci_device") {
      EXPECT_EQ(type, "u32");
      EXPECT_EQ(load(uint32_t{}), device.pci_device);
    } else if (name == "memory_bytes") {
      EXPECT_EQ(type, "u64");
      EXPECT_EQ(load(uint64_t{}), device.memory_bytes);
    } else if (name == "name") {
      EXPECT_EQ(*offset, kDeviceFixedBytes);
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(value + *offset), device.name.size()), device.name);
    } else {
      ADD_FAILURE() << "the device table names a field the encoder does not write: " << name;
    }
  }
  EXPECT_EQ(seen, (std::set<std::string>{"ordinal", "uuid", "pci_domain", "pci_bus", "pci_device",
                                         "memory_bytes", "name"}));
}

// ---- enumerations ------------------------------------------------------------------------------

struct EnumTable {
  std::string heading;
  std::vector<std::pair<std::string, uint64_t>> values;  // in the doc's order
};

#define V(Enum, name) std::pair<std::string, uint64_t>(#name, static_cast<uint64_t>(Enum::name))
#define C(name) std::pair<std::string, uint64_t>(#name, static_cast<uint64_t>(name))

std::vector<EnumTable> enum_tables() {
  return {
      {"Enum TraceClock (u32)",
       {V(TraceClock, kGpuTimestamp), V(TraceClock, kRealtime), V(TraceClock, kMonotonic),
        V(TraceClock, kMonotonicRaw)}},
      {"Enum ChunkType (u16)",
       {V(ChunkType, kRecords), V(ChunkType, kStrings), V(ChunkType, kProcessInfo),
        V(ChunkType, kClockAnchor), V(ChunkType, kEnd)}},
      {"Flags ChunkFlags (u16)", {C(kChunkFlagZstd)}},
      {"Enum ProcessField (u16)",
       {V(ProcessField, kRank), V(ProcessField, kLocalRank), V(ProcessField, kWorldSize),
        V(ProcessField, kLocalWorldSize), V(ProcessField, kNodeRank), V(ProcessField, kRestartAttempt),
        V(ProcessField, kRunId), V(ProcessField, kLauncher), V(ProcessField, kDevice),
        V(ProcessField, kCommandLine), V(ProcessField, kPipescopeVersion), V(ProcessField, kCaptureKinds)}},
      {"Enum RecordKind (u16)",
       {V(RecordKind, kInvalid), V(RecordKind, kKernel), V(RecordKind, kMemcpy), V(RecordKind, kMemset),
        V(RecordKind, kMemory), V(RecordKind, kSync), V(RecordKind, kApi), V(RecordKind, kNcclOp),
        V(RecordKind, kNcclComm), V(RecordKind, kNvtx), V(RecordKind, kOverhead), V(RecordKind, kNotice),
        V(RecordKind, kExternalCorrelation), V(RecordKind, kNcclCall)}},
      {"Enum CopyKind (u8)",
       {V(CopyKind, kUnknown), V(CopyKind, kHostToDevice), V(CopyKind, kDeviceToHost),
        V(CopyKind, kDeviceToDevice), V(CopyKind, kHostToHost), V(CopyKind, kPeerToPeer)}},
      {"Enum MemoryKind (u8)",
       {V(MemoryKind, kUnknown), V(MemoryKind, kPageable), V(MemoryKind, kPinned), V(MemoryKind, kDevice),
        V(MemoryKind, kArray), V(MemoryKind, kManaged), V(MemoryKind, kDeviceStatic),
        V(MemoryKind, kManagedStatic)}},
      {"Flags ActivityFlags (u8)", {C(kActivityFlagAsync), C(kActivityFlagInGraph)}},
      {"Enum MemoryOperation (u8)",
       {V(MemoryOperation, kAllocate), V(MemoryOperation, kRelease), V(MemoryOperation, kPoolCreate),
        V(MemoryOperation, kPoolDestroy), V(MemoryOperation, kPoolTrim)}},
      {"Flags MemoryFlags (u8)", {C(kMemoryFlagFromPool)}},
      {"Enum SyncType (u8)",
       {V(SyncType, kUnknown), V(SyncType, kEventSynchronize), V(SyncType, kStreamWaitEvent),
        V(SyncType, kStreamSynchronize), V(SyncType, kContextSynchronize)}},
      {"Enum ApiDomain (u8)", {V(ApiDomain, kRuntime), V(ApiDomain, kDriver)}},
      {"Enum NcclOpType (u8)",
       {V(NcclOpType, kAllReduce), V(NcclOpType, kAllGather), V(NcclOpType, kReduceScatter),
        V(NcclOpType, kBroadcast), V(NcclOpType, kReduce), V(NcclOpType, kAllToAll), V(NcclOpType, kGather),
        V(NcclOpType, kScatter), V(NcclOpType, kSend), V(NcclOpType, kRecv)}},
      {"Flags NcclFlags (u8)", {C(kNcclFlagInGroup), C(kNcclFlagGraphCapture), C(kNcclFlagFailed)}},
      {"Enum NcclCommEvent (u8)",
       {V(NcclCommEvent, kInit), V(NcclCommEvent, kSplit), V(NcclCommEvent, kShrink),
        V(NcclCommEvent, kFinalize), V(NcclCommEvent, kDestroy), V(NcclCommEvent, kAbort),
        V(NcclCommEvent, kRevoke)}},
      {"Enum NvtxEvent (u8)",
       {V(NvtxEvent, kPush), V(NvtxEvent, kPop), V(NvtxEvent, kStart), V(NvtxEvent, kEnd),
        V(NvtxEvent, kMark)}},
      {"Enum OverheadKind (u8)",
       {V(OverheadKind, kUnknown), V(OverheadKind, kDriverCompiler), V(OverheadKind, kCuptiBufferFlush),
        V(OverheadKind, kCuptiInstrumentation), V(OverheadKind, kCuptiResource),
        V(OverheadKind, kRuntimeTriggeredModuleLoading), V(OverheadKind, kLazyFunctionLoading),
        V(OverheadKind, kCommandBufferFull), V(OverheadKind, kActivityBuffer),
        V(OverheadKind, kPipescopeFlush)}},
      {"Enum NoticeCode (u16)",
       {V(NoticeCode, kRecordsDropped), V(NoticeCode, kCuptiBufferDropped), V(NoticeCode, kCaptureLost),
        V(NoticeCode, kCaptureResumed), V(NoticeCode, kInjectionConflict), V(NoticeCode, kUnsupportedVersion),
        V(NoticeCode, kKindUnavailable), V(NoticeCode, kWindowOpened), V(NoticeCode, kWindowClosed),
        V(NoticeCode, kClockOffsetApplied), V(NoticeCode, kKernelSamplingResumed),
        V(NoticeCode, kKernelSamplingPaused), V(NoticeCode, kProcessSignal), V(NoticeCode, kProcessExit)}},
      {"Enum ExternalCorrelationKind (u8)", {V(ExternalCorrelationKind, kNccl)}},
      {"Enum NcclCallKind (u8)", {V(NcclCallKind, kOperation), V(NcclCallKind, kCommunicator)}},
      {"Enum NcclCallState (u8)", {V(NcclCallState, kInFlight), V(NcclCallState, kReturned)}},
  };
}

#undef V
#undef C

TEST(TraceFormatDoc, EnumerationTablesMatchTheCode) {
  const std::vector<EnumTable> tables = enum_tables();
  for (const EnumTable& table : tables) {
    SCOPED_TRACE("### " + table.heading);
    const Section* section = find_section(table.heading);
    ASSERT_NE(section, nullptr) << "docs/trace-format.md has no heading `### " << table.heading << "`";
    ASSERT_EQ(section->rows.size(), table.values.size()) << "one row per value, | value | name | meaning |";
    for (size_t i = 0; i < table.values.size(); ++i) {
      const auto& row = section->rows[i];
      ASSERT_EQ(row.size(), 3u) << "row " << i << ": | value | name | meaning |";
      EXPECT_EQ(row[1], table.values[i].first) << "row " << i;
      EXPECT_EQ(parse_number(row[0]), std::optional<uint64_t>(table.values[i].second))
          << table.values[i].first;
      EXPECT_FALSE(row[2].empty()) << "meaning of " << table.values[i].first;
    }
  }
  // And no enumeration table in the doc that this test does not check.
  for (const Section& s : doc_sections()) {
    if (s.heading.rfind("Enum ", 0) != 0 && s.heading.rfind("Flags ", 0) != 0) continue;
    bool checked = false;
    for (const EnumTable& table : tables) checked = checked || table.heading == s.heading;
    EXPECT_TRUE(checked) << "doc line " << s.line << ": `### " << s.heading
                         << "` is not checked by this test";
  }
}

TEST(TraceFormatDoc, EnumerationFieldWidthsMatchTheCode) {
  EXPECT_EQ(sizeof(std::underlying_type_t<TraceClock>), sizeof(FileHeaderFixed::trace_clock));
  EXPECT_EQ(sizeof(std::underlying_type_t<ChunkType>), sizeof(ChunkHeader::type));
  EXPECT_EQ(sizeof(std::underlying_type_t<ProcessField>), sizeof(ProcessFieldHeader::field));
  EXPECT_EQ(sizeof(std::underlying_type_t<RecordKind>), sizeof(RecordHeader::kind));
  EXPECT_EQ(sizeof(std::underlying_type_t<NoticeCode>), sizeof(NoticeRecord::code));
  EXPECT_EQ(sizeof(std::underlying_type_t<CopyKind>), 1u);
  EXPECT_EQ(sizeof(std::underlying_type_t<NcclOpType>), 1u);
  EXPECT_EQ(sizeof(std::underlying_type_t<ExternalCorrelationKind>),
            sizeof(ExternalCorrelationRecord::external_kind));
}

// ---- CRC ---------------------------------------------------------------------------------------

TEST(TraceFormatDoc, StatedCrcCheckValueIsWhatTheCodeComputes) {
  const std::string doc = read_doc();
  EXPECT_NE(doc.find("0x82F63B78"), std::string::npos);
  EXPECT_NE(doc.find("is 0xE3069283"), std::string::npos);
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
}

// ---- worked example ------------------------------------------------------------------------

// The bytes of an `xxd` dump: "00000010: 9210 0000 ...  ascii".
std::vector<std::byte> parse_xxd(const std::string& dump) {
  std::vector<std::byte> bytes;
  std::stringstream in(dump);
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    EXPECT_EQ(std::stoull(line.substr(0, colon), nullptr, 16), bytes.size()) << line;
    // 16 bytes as 8 groups of 4 hex digits take 39 columns; the ASCII column follows.
    const std::string hex = line.substr(colon + 2, 39);
    std::string digits;
    for (char c : hex) {
      if (c != ' ') digits += c;
    }
    for (size_t i = 0; i + 1 < digits.size(); i += 2) {
      bytes.push_back(static_cast<std::byte>(std::stoul(digits.substr(i, 2), nullptr, 16)));
    }
  }
  return bytes;
}

std::vector<std::byte> worked_example() {
  const Section* section = find_section("The whole file (xxd)");
  if (section == nullptr || section->code_blocks.size() != 1) {
    ADD_FAILURE() << "the worked example needs one code block under `### The whole file (xxd)`";
    return {};
  }
  return parse_xxd(section->code_blocks[0]);
}

TEST(TraceFormatDoc, WorkedExampleReadsBackAsTheDocDescribesIt) {
  const std::vector<std::byte> file = worked_example();
  ASSERT_EQ(file.size(), 388u);
  auto summary = summarize_trace(file);
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(summary->stop_reason, StopReason::kEndOfData) << summary->stop_detail;
  EXPECT_EQ(summary->chunks, 6u);
  EXPECT_EQ(summary->valid_bytes, 388u);
  EXPECT_EQ(summary->header.header_bytes, 72u);
  EXPECT_EQ(summary->header.host, "node07");
  EXPECT_EQ(summary->header.pid, 4242u);
  EXPECT_EQ(summary->header.trace_clock, TraceClock::kMonotonic);
  ASSERT_TRUE(summary->process.has_value());
  EXPECT_EQ(summary->process->rank, std::optional<int32_t>(0));
  ASSERT_EQ(summary->strings.size(), 1u);
  EXPECT_EQ(summary->strings.get(1), "backward");
  EXPECT_EQ(summary->records, 1u);
  EXPECT_EQ(summary->records_by_kind[static_cast<size_t>(RecordKind::kNvtx)], 1u);
  ASSERT_EQ(summary->anchors.size(), 2u);
  EXPECT_EQ(summary->anchors[1].uncertainty_ns, 70u);
  ASSERT_TRUE(summary->end.has_value());
  EXPECT_EQ(summary->end->records_written, 1u);
  EXPECT_EQ(summary->end->chunks_written, 5u);

  // The nvtx record sits where the annotation says, with the values it gives.
  NvtxRecord nvtx{};
  std::memcpy(&nvtx, file.data() + 0xe4, sizeof(nvtx));
  EXPECT_EQ(nvtx.header.kind, static_cast<uint16_t>(RecordKind::kNvtx));
  EXPECT_EQ(nvtx.event, static_cast<uint8_t>(NvtxEvent::kPush));
  EXPECT_EQ(nvtx.name_id, 1u);
  EXPECT_EQ(nvtx.thread_id, 4243u);
  EXPECT_EQ(nvtx.timestamp_ns, 965471408996u);
  // The conversion to wall time that section 15 works out.
  const ClockAnchorPayload& anchor = summary->anchors[1];
  EXPECT_EQ(anchor.realtime_ns + (nvtx.timestamp_ns - anchor.trace_clock_ns), 1795328389178314785u);
}

TEST(TraceFormatDoc, WorkedExampleCutInsideTheRecordsChunkReadsAsTheDocSays) {
  std::vector<std::byte> file = worked_example();
  ASSERT_EQ(file.size(), 388u);
  file.resize(0xf0);
  auto summary = summarize_trace(file);
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(summary->stop_reason, StopReason::kTruncated);
  EXPECT_EQ(summary->chunks, 3u);
  EXPECT_EQ(summary->valid_bytes, 204u);
  EXPECT_EQ(summary->total_bytes, 240u);
  EXPECT_EQ(summary->records, 0u);
  EXPECT_NE(summary->stop_detail.find("payload cut short"), std::string::npos) << summary->stop_detail;
}

}  // namespace
}  // namespace pipescope::trace
