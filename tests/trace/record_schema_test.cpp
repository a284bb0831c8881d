// The machine-readable record layouts: every generic consumer (export, inspect, the doc test)
// trusts them, so each must describe its struct exactly.
#include "pipescope/trace/record_schema.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <set>
#include <string>

namespace pipescope::trace {
namespace {

struct ExpectedSchema {
  RecordKind kind;
  const char* name;
  size_t size_bytes;
};

// One row per record kind in records.h, sizes as the structs define them.
constexpr ExpectedSchema kEveryKind[] = {
    {RecordKind::kKernel, "kernel", sizeof(KernelRecord)},
    {RecordKind::kMemcpy, "memcpy", sizeof(MemcpyRecord)},
    {RecordKind::kMemset, "memset", sizeof(MemsetRecord)},
    {RecordKind::kMemory, "memory", sizeof(MemoryRecord)},
    {RecordKind::kSync, "sync", sizeof(SyncRecord)},
    {RecordKind::kApi, "api", sizeof(ApiRecord)},
    {RecordKind::kNcclOp, "nccl_op", sizeof(NcclOpRecord)},
    {RecordKind::kNcclComm, "nccl_comm", sizeof(NcclCommRecord)},
    {RecordKind::kNvtx, "nvtx", sizeof(NvtxRecord)},
    {RecordKind::kOverhead, "overhead", sizeof(OverheadRecord)},
    {RecordKind::kNotice, "notice", sizeof(NoticeRecord)},
    {RecordKind::kExternalCorrelation, "external_correlation", sizeof(ExternalCorrelationRecord)},
    {RecordKind::kNcclCall, "nccl_call", sizeof(NcclCallRecord)},
};

TEST(RecordSchema, OneSchemaPerRecordKind) {
  ASSERT_EQ(record_schemas().size(), std::size(kEveryKind));
  ASSERT_EQ(std::size(kEveryKind), size_t{kLastRecordKind});
  for (const ExpectedSchema& expected : kEveryKind) {
    const RecordSchema* schema = find_record_schema(expected.kind);
    ASSERT_NE(schema, nullptr) << expected.name;
    EXPECT_EQ(schema->kind, expected.kind);
    EXPECT_STREQ(schema->name, expected.name);
    EXPECT_EQ(schema->size_bytes, expected.size_bytes) << expected.name;
    EXPECT_STREQ(record_kind_name(expected.kind), expected.name);
  }
}

TEST(RecordSchema, FindsNothingForKindsOutsideTheFormat) {
  EXPECT_EQ(find_record_schema(RecordKind::kInvalid), nullptr);
  EXPECT_EQ(find_record_schema(static_cast<RecordKind>(kLastRecordKind + 1)), nullptr);
  EXPECT_EQ(find_record_schema(static_cast<RecordKind>(0xFFFF)), nullptr);
  EXPECT_STREQ(record_kind_name(static_cast<RecordKind>(200)), "unknown");
}

TEST(RecordSchema, FieldsTileTheRecordWithoutGapsOrOverlaps) {
  for (const RecordSchema& schema : record_schemas()) {
    SCOPED_TRACE(schema.name);
    size_t next_offset = 0;
    for (const FieldDesc& field : schema.fields) {
      EXPECT_EQ(field.offset, next_offset) << "field " << field.name;
      // Natural alignment, as the structs have it: no field straddles its own size.
      EXPECT_EQ(field.offset % field_size_bytes(field.type), 0u) << "field " << field.name;
      next_offset = field.offset + field_size_bytes(field.type);
    }
    EXPECT_EQ(next_offset, schema.size_bytes);
  }
}

TEST(RecordSchema, EveryRecordStartsWithKindAndSize) {
  for (const RecordSchema& schema : record_schemas()) {
    SCOPED_TRACE(schema.name);
    ASSERT_GE(schema.fields.size(), 2u);
    EXPECT_STREQ(schema.fields[0].name, "kind");
    EXPECT_EQ(schema.fields[0].offset, 0u);
    EXPECT_EQ(schema.fields[0].type, FieldType::kU16);
    EXPECT_STREQ(schema.fields[1].name, "size_bytes");
    EXPECT_EQ(schema.fields[1].offset, 2u);
    EXPECT_EQ(schema.fields[1].type, FieldType::kU16);
  }
}

TEST(RecordSchema, NamesAreUnique) {
  std::set<std::string> kind_names;
  for (const RecordSchema& schema : record_schemas()) {
    EXPECT_TRUE(kind_names.insert(schema.name).second) << "kind name " << schema.name;
    std::set<std::string> field_names;
    for (const FieldDesc& field : schema.fields) {
      EXPECT_TRUE(field_names.insert(field.name).second) << schema.name << "." << field.name;
    }
  }
}

TEST(RecordSchema, KernelLayoutMatchesTheFormatDocument) {
  // Offsets worked out from the struct: header 4, device 4, then two u64 timestamps.
  const RecordSchema* kernel = find_record_schema(RecordKind::kKernel);
  ASSERT_NE(kernel, nullptr);
  auto offset_of = [&](const char* name) -> int {
    for (const FieldDesc& f : kernel->fields) {
      if (std::strcmp(f.name, name) == 0) return f.offset;
    }
    return -1;
  };
  EXPECT_EQ(offset_of("device"), 4);
  EXPECT_EQ(offset_of("start_ns"), 8);
  EXPECT_EQ(offset_of("end_ns"), 16);
  EXPECT_EQ(offset_of("grid_y"), 44);
  EXPECT_EQ(offset_of("dynamic_shared_bytes"), 60);
}

TEST(RecordSchema, ReadsFieldsOfARecord) {
  NcclOpRecord op = make_record<NcclOpRecord>();
  op.peer = -3;
  op.bytes = 0x0123'4567'89AB'CDEFull;
  op.op = static_cast<uint8_t>(NcclOpType::kSend);
  const auto* bytes = reinterpret_cast<const std::byte*>(&op);
  const RecordSchema* schema = find_record_schema(RecordKind::kNcclOp);
  ASSERT_NE(schema, nullptr);
  for (const FieldDesc& field : schema->fields) {
    const std::string name = field.name;
    if (name == "peer") {
      EXPECT_EQ(field.type, FieldType::kI32);
      EXPECT_EQ(read_signed_field(bytes, field), -3);  // sign-extended
      EXPECT_EQ(read_unsigned_field(bytes, field), 0xFFFFFFFDu);
    } else if (name == "bytes") {
      EXPECT_EQ(read_unsigned_field(bytes, field), 0x0123'4567'89AB'CDEFull);
    } else if (name == "op") {
      EXPECT_EQ(read_unsigned_field(bytes, field), 9u);
    } else if (name == "size_bytes") {
      EXPECT_EQ(read_unsigned_field(bytes, field), 88u);
    } else if (name == "kind") {
      EXPECT_EQ(read_unsigned_field(bytes, field), 7u);
    }
  }
}

TEST(RecordSchema, FieldTypesHaveTheirSizesAndNames) {
  EXPECT_EQ(field_size_bytes(FieldType::kU8), 1u);
  EXPECT_EQ(field_size_bytes(FieldType::kU16), 2u);
  EXPECT_EQ(field_size_bytes(FieldType::kU32), 4u);
  EXPECT_EQ(field_size_bytes(FieldType::kI32), 4u);
  EXPECT_EQ(field_size_bytes(FieldType::kU64), 8u);
  EXPECT_STREQ(field_type_name(FieldType::kU8), "u8");
  EXPECT_STREQ(field_type_name(FieldType::kU16), "u16");
  EXPECT_STREQ(field_type_name(FieldType::kU32), "u32");
  EXPECT_STREQ(field_type_name(FieldType::kI32), "i32");
  EXPECT_STREQ(field_type_name(FieldType::kU64), "u64");
}

}  // namespace
}  // namespace pipescope::trace
