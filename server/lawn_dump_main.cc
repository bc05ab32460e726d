// lawn_dump: prints every record of a stopped lawnd's data dir, or of a checkpoint, as JSON lines
// (server/data_dir_dump.h), and the counts on stderr.
#include <cstdio>
#include <iostream>
#include <string>

#include "server/data_dir_dump.h"

namespace {

constexpr char kUsage[] =
    "usage: lawn_dump DATA_DIR\n"
    "\n"
    "Prints every record of a lawnd data dir (storage.engine rocksdb or log) or of a checkpoint, one JSON\n"
    "object per line: {\"pending\": Timer}, {\"outbox\": Expiration} (fired, not yet acked), {\"staged\":\n"
    "Expiration} (a cluster member's staging area), in the proto3 JSON of lawn.v1 (as lawnctl --json prints\n"
    "them: ids and payloads base64). The counts go to stderr.\n"
    "\n"
    "Nothing in the dir is changed. A running lawnd's data dir is refused (it holds lawn.lock); take a\n"
    "checkpoint (lawnctl checkpoint NAME) and dump <data_dir>/checkpoints/NAME instead.\n"
    "Exit status: 0 done, 1 the dir could not be read (the message says why), 2 usage.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fputs(kUsage, argc == 2 ? stdout : stderr);
    return argc == 2 ? 0 : 2;
  }
  std::ios::sync_with_stdio(false);
  absl::StatusOr<lawn::DumpCounts> counts = lawn::DumpDataDir(argv[1], std::cout);
  if (!counts.ok()) {
    std::fprintf(stderr, "lawn_dump: %s\n", counts.status().ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "lawn_dump: %llu pending timers, %llu outbox entries, %llu staged entries\n",
               static_cast<unsigned long long>(counts->pending),
               static_cast<unsigned long long>(counts->outbox),
               static_cast<unsigned long long>(counts->staged));
  return 0;
}
