// A miniature companion of nvidia.ko (uvm, modeset, drm, peermem): a module of that name that uses
// one function of the module it depends on, as the real one depends on it, and says so when loaded.
#include <linux/init.h>
#include <linux/module.h>

#define NVP2P_MINI_COMPANION(name, uses, uses_version)                                        \
	MODULE_LICENSE("Dual MIT/GPL");                                                       \
	MODULE_VERSION(NV_VERSION_STRING);                                                    \
	MODULE_DESCRIPTION("p2pnode test: a miniature " name ".ko");                         \
	extern const char *uses_version(void);                                                \
	static int __init mini_init(void)                                                     \
	{                                                                                     \
		pr_info(name ": %s (uses " uses " %s)\n", NV_VERSION_STRING, uses_version()); \
		return 0;                                                                     \
	}                                                                                     \
	static void __exit mini_exit(void)                                                    \
	{                                                                                     \
	}                                                                                     \
	module_init(mini_init);                                                               \
	module_exit(mini_exit)
