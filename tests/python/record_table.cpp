// Prints the ring record kinds as the C++ runtime knows them (runtime/core/ring_records.hpp,
// the layouts of include/ringtrace/detail/record.hpp), for check_record_table.py: one line
// per kind 0-15, `KIND unassigned`, or `KIND BYTES FLAGS` with BYTES the record's bytes
// before a text (an extended record's header alone) and FLAGS what the kind has: t a time
// of its own, b a zone boundary, x a text after its fixed slots ("-": none of them).
#include <cstdint>
#include <cstdio>
#include <string>

#include "ring_records.hpp"

int main() {
  using namespace ringtrace::detail;
  for (unsigned k = 0; k < 16; ++k) {
    const auto kind = static_cast<RecordKind>(k);
    if (!kind_assigned(kind)) {
      std::printf("%u unassigned\n", k);
      continue;
    }
    std::string flags;
    if (kind_has_time(kind)) flags += 't';
    if (kind_is_boundary(kind)) flags += 'b';
    if (kind_has_text(kind)) flags += 'x';
    std::printf("%u %llu %s\n", k, static_cast<unsigned long long>(fixed_record_bytes(kind)),
                flags.empty() ? "-" : flags.c_str());
  }
  return 0;
}
