//go:build linux && !amd64 && !386

package outdir

import "syscall"

const sysSyncfs = syscall.SYS_SYNCFS
