// Command pause is the process of the e2e node's sandbox (pause) image: it sleeps until SIGTERM or SIGINT,
// then exits 0. Nothing can be pulled here, so the image is built locally from this binary.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
