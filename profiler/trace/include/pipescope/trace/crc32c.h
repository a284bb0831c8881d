// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of every header and
// chunk. Uses the SSE4.2 instruction when the CPU has it, a table otherwise; both agree.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pipescope::trace {

// Continues a finished CRC over more bytes: crc32c_extend(crc32c(a), b) == crc32c(a + b).
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size);
inline uint32_t crc32c(const void* data, size_t size) { return crc32c_extend(0, data, size); }

// The portable path alone, so tests can hold the fast path to it.
uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t size);

}  // namespace pipescope::trace
