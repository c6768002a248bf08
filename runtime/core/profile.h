// SPDX-License-Identifier: BSD-3-Clause
// profile.h - a method's profile: timed events of method load, of each
// execute, of each instruction and of each delegate node, and the ETDump file
// they are written to (pteron.h, "Profiling"; schema/etdump.fbs). Never
// installed.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

namespace pteron {

// The profile's clock: nanoseconds of std::chrono::steady_clock.
inline uint64_t profile_clock_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

struct ProfileEvent {
  int32_t run;          // -1: method load
  int32_t name;         // index into Profile::strings, -1: none
  int32_t chain;        // -1: not an instruction's
  int32_t instruction;  // -1: none
  int32_t debug_id;     // a delegate node's integer id, -1: none
  int32_t debug_name;   // index into Profile::strings, -1: none
  uint64_t start_ns, end_ns;
};

struct Profile {
  bool on = false;
  int32_t runs = 0;                  // executes recorded since on or clear
  int32_t chain = -1, instruction = -1;  // the instruction running now
  std::vector<ProfileEvent> load;    // method load's events (run -1)
  std::vector<ProfileEvent> events;  // the executes' events, in the order they ended
  // Interned names. A deque: the C API hands out c_str() pointers, which must
  // survive later insertions.
  std::deque<std::string> strings;
  std::unordered_map<std::string, int32_t> index;

  int32_t intern(const char* s);
  void add(int32_t name, int32_t chain, int32_t instruction, uint64_t start, uint64_t end) {
    events.push_back({runs, name, chain, instruction, -1, -1, start, end});
  }
  void clear();
};

}  // namespace pteron
