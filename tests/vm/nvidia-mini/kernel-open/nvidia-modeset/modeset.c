// The miniature nvidia-modeset.ko: depends on nvidia and is used by nvidia-drm, as the real one.
#include <linux/init.h>
#include <linux/module.h>

MODULE_LICENSE("Dual MIT/GPL");
MODULE_VERSION(NV_VERSION_STRING);
MODULE_DESCRIPTION("p2pnode test: a miniature nvidia-modeset.ko");

extern const char *nvp2p_version(void);

const char *nvp2p_modeset_version(void)
{
	return nvp2p_version();
}
EXPORT_SYMBOL(nvp2p_modeset_version);

static int __init mini_init(void)
{
	pr_info("nvidia-modeset: %s (uses nvidia %s)\n", NV_VERSION_STRING, nvp2p_version());
	return 0;
}

static void __exit mini_exit(void)
{
}

module_init(mini_init);
module_exit(mini_exit);
