#pragma once
// Frames over one end of the socketpair between the daemon and its HTTP process: blocking reads
// and writes (each side sets SO_SNDTIMEO, so a peer that stops reading fails a write, not hangs it).
#include <optional>
#include <string_view>

#include "privsep/frame.hpp"

namespace p2pnode::privsep {

// The whole of `bytes`, or an error (the peer is gone, or stopped reading for the send timeout).
Status write_all(int fd, std::string_view bytes);

// Blocks until `reader` holds a whole frame: the frame; nullopt at a clean end of stream; an
// error for a read that failed, a frame cut short by the end of stream or a malformed one.
Result<std::optional<Frame>> read_frame(int fd, FrameReader& reader);

// Send and receive timeouts on a socket (0: none).
void set_socket_timeouts(int fd, int send_ms, int receive_ms);

}  // namespace p2pnode::privsep
