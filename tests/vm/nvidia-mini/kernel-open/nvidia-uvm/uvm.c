// The miniature nvidia-uvm.ko: depends on nvidia, as the real one does, and does nothing else.
#include "../mini_companion.h"

NVP2P_MINI_COMPANION("nvidia-uvm", "nvidia", nvp2p_version);
