// CRC-32C (Castagnoli, the polynomial of iSCSI, ext4 and RocksDB): the checksum of the round log's records
// (storage/round_log.h). The SSE4.2 instruction when the CPU has it (three independent chains of it on
// buffers of 1.5 KiB or more, about 8 bytes per cycle; one chain, a third of that, on shorter ones), a table
// otherwise; both give the same value, so a log written on one machine reads on any other.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace lawn::internal {

// The CRC-32C of `data`, continuing from `crc` (the value for the bytes before; 0 to start).
// Crc32c("123456789") == 0xE3069283.
uint32_t Crc32c(std::string_view data, uint32_t crc = 0);

// The table version alone, for the test that compares the two.
uint32_t Crc32cPortable(std::string_view data, uint32_t crc = 0);

}  // namespace lawn::internal
