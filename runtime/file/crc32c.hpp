// CRC32C (Castagnoli), the checksum of every frame of a format-2 trace file: the
// polynomial 0x1EDC6F41 (reflected 0x82F63B78), initial value and final xor 0xFFFFFFFF,
// as iSCSI, ext4 and LevelDB's logs use it. x86-64 computes it with the SSE4.2 `crc32`
// instruction (when the CPU has it: checked once); elsewhere a table.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ringtrace::detail {

// The CRC32C of `bytes` bytes at `data`, continued from `crc` (a previous call's result;
// 0 to start): crc32c(a + b) == crc32c_extend(crc32c(a), b).
std::uint32_t crc32c_extend(std::uint32_t crc, const void* data, std::size_t bytes) noexcept;
inline std::uint32_t crc32c(const void* data, std::size_t bytes) noexcept { return crc32c_extend(0, data, bytes); }

}  // namespace ringtrace::detail
