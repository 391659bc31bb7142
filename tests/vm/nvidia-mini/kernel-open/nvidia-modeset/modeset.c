// The miniature nvidia-modeset.ko: depends on nvidia and is used by nvidia-drm, as the real one.
#include "../mini_companion.h"

NVP2P_MINI_COMPANION("nvidia-modeset", "nvidia", nvp2p_version);

const char *nvp2p_modeset_version(void)
{
	return nvp2p_version();
}
EXPORT_SYMBOL(nvp2p_modeset_version);
