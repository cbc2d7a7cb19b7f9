//go:build linux && !amd64 && !386

package export

import "syscall"

const sysSyncfs = syscall.SYS_SYNCFS
