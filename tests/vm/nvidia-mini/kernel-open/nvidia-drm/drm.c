// The miniature nvidia-drm.ko: depends on nvidia-modeset, as the real one does, and does nothing else.
#include "../mini_companion.h"

NVP2P_MINI_COMPANION("nvidia-drm", "nvidia-modeset", nvp2p_modeset_version);
