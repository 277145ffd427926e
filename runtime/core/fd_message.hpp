// One heap descriptor message between two local PEs (core/fd_exchange.cpp): the sender's PE number
// (4 bytes) with exactly one file descriptor attached (SCM_RIGHTS). Kept apart from the exchange so
// that the receiving side, which reads what a socket's other end chose to send, can be fuzzed
// alone (fuzz/fd_message_fuzz.cpp).
#pragma once

#include <chrono>
#include <cstdint>

namespace tdist {

using FdClock = std::chrono::steady_clock;

// Sends `pe` with `fd` attached; throws TDIST_ERR_SMEM naming the error.
void send_descriptor(int sock, int fd, int32_t pe);

// Receives PE `pe`'s message by `deadline` and returns the descriptor (the caller owns it) with the
// sender's PE number in `*who`. Anything but one whole 4-byte number with exactly one descriptor
// (nothing arrived in time, a closed connection, a short message, no descriptor, several, or a
// truncated control message) throws naming what was wrong, with every descriptor that did arrive
// closed: a hostile or broken peer can neither leak descriptors into this process nor hand it a
// second one.
int recv_descriptor(int sock, int pe, int32_t *who, FdClock::time_point deadline, double timeout_s);

// Milliseconds left until `deadline` (0 once passed), for poll().
int ms_left(FdClock::time_point deadline);

}  // namespace tdist
