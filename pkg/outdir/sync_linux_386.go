package outdir

// sysSyncfs is syncfs(2)'s number; package syscall does not define it on 386 (arch/x86/entry/syscalls/syscall_32.tbl).
const sysSyncfs = 344
