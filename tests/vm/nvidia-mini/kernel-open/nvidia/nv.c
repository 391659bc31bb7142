// The miniature nvidia.ko: what p2pnode reads of a loaded NVIDIA driver, and nothing else.
#include <linux/fs.h>
#include <linux/init.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>

MODULE_LICENSE("Dual MIT/GPL");
MODULE_VERSION(NV_VERSION_STRING);
MODULE_DESCRIPTION("p2pnode test: a miniature nvidia.ko (no GPU driver inside)");

static struct proc_dir_entry *nv_proc_dir;

static int nv_version_show(struct seq_file *m, void *v)
{
	seq_printf(m, "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  (p2pnode@test)  Sat Nov 21 00:00:00 UTC 2026\n",
		   NV_VERSION_STRING);
	seq_puts(m, "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n");
	return 0;
}

static int nvctl_open(struct inode *inode, struct file *file)
{
	return 0;
}

static const struct file_operations nvctl_fops = {
	.owner = THIS_MODULE,  // an open /dev/nvidiactl holds the module, as the real one does
	.open = nvctl_open,
};

static struct miscdevice nvctl = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "nvidiactl",
	.fops = &nvctl_fops,
	.mode = 0666,
};

const char *nvp2p_version(void)
{
	return NV_VERSION_STRING;
}
EXPORT_SYMBOL(nvp2p_version);

// The third-party P2P entry points gdrcopy's gdrdrv links against, where a test put the real
// tree's kernel-open/nvidia/nv-p2p.h beside this file (tests/vm/test_driver_reload.sh): the
// prototypes from that header (so modversions' CRCs match what gdrdrv was built with), nothing
// behind them: there is no GPU memory to pin here.
#if __has_include("nv-p2p.h")
#include <linux/pci.h>
#include <linux/types.h>
#include "nv-p2p.h"

int nvidia_p2p_get_pages(uint64_t p2p_token, uint32_t va_space, uint64_t virtual_address, uint64_t length,
			 struct nvidia_p2p_page_table **page_table, void (*free_callback)(void *data), void *data)
{
	return -ENODEV;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_get_pages);

int nvidia_p2p_get_pages_persistent(uint64_t virtual_address, uint64_t length,
				    struct nvidia_p2p_page_table **page_table, uint32_t flags)
{
	return -ENODEV;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_get_pages_persistent);

int nvidia_p2p_put_pages(uint64_t p2p_token, uint32_t va_space, uint64_t virtual_address,
			 struct nvidia_p2p_page_table *page_table)
{
	return -EINVAL;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_put_pages);

int nvidia_p2p_put_pages_persistent(uint64_t virtual_address, struct nvidia_p2p_page_table *page_table, uint32_t flags)
{
	return -EINVAL;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_put_pages_persistent);

int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table)
{
	return -EINVAL;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_free_page_table);
#endif

static int __init nv_init(void)
{
	int rc;

	nv_proc_dir = proc_mkdir("driver/nvidia", NULL);
	if (!nv_proc_dir)
		return -ENOMEM;
	if (!proc_create_single("version", 0444, nv_proc_dir, nv_version_show)) {
		proc_remove(nv_proc_dir);
		return -ENOMEM;
	}
	rc = misc_register(&nvctl);
	if (rc) {
		proc_remove(nv_proc_dir);
		return rc;
	}
	pr_info("NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  (p2pnode@test)\n",
		NV_VERSION_STRING);
	return 0;
}

static void __exit nv_exit(void)
{
	misc_deregister(&nvctl);
	proc_remove(nv_proc_dir);
}

module_init(nv_init);
module_exit(nv_exit);
