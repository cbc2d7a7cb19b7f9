package outdir

// sysSyncfs is syncfs(2)'s number; package syscall does not define it on amd64 (arch/x86/entry/syscalls/syscall_64.tbl).
const sysSyncfs = 306
