// A machine-readable description of every record layout: field names, offsets and types.
// Generic consumers (the SQLite export, `pipescope inspect --records`, the test that holds
// docs/trace-format.md to the code) read records through it instead of repeating layouts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "pipescope/trace/records.h"

namespace pipescope::trace {

enum class FieldType : uint8_t { kU8, kU16, kU32, kU64, kI32 };

struct FieldDesc {
  const char* name;
  uint16_t offset;
  FieldType type;
};

struct RecordSchema {
  RecordKind kind;
  const char* name;  // as in docs/trace-format.md and the `kinds` vocabulary
  uint16_t size_bytes;
  std::span<const FieldDesc> fields;  // in offset order, tiling the record without gaps
};

std::span<const RecordSchema> record_schemas();
const RecordSchema* find_record_schema(RecordKind kind);
size_t field_size_bytes(FieldType type);
const char* field_type_name(FieldType type);  // "u8", "u16", "u32", "u64", "i32"

// Reads one field of a record whose bytes are at least field.offset + size long;
// signed fields come back sign-extended.
int64_t read_signed_field(const std::byte* record, const FieldDesc& field);
uint64_t read_unsigned_field(const std::byte* record, const FieldDesc& field);

}  // namespace pipescope::trace
