// The miniature nvidia-peermem.ko: depends on nvidia, as the real one does, and does nothing else.
#include <linux/init.h>
#include <linux/module.h>

MODULE_LICENSE("Dual MIT/GPL");
MODULE_VERSION(NV_VERSION_STRING);
MODULE_DESCRIPTION("p2pnode test: a miniature nvidia-peermem.ko");

extern const char *nvp2p_version(void);

static int __init mini_init(void)
{
	pr_info("nvidia-peermem: %s (uses nvidia %s)\n", NV_VERSION_STRING, nvp2p_version());
	return 0;
}

static void __exit mini_exit(void)
{
}

module_init(mini_init);
module_exit(mini_exit);
