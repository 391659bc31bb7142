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
