//go:build unix

package demo

import (
	"os/exec"
	"syscall"
)

// stopTree makes cancelling cmd's context stop the whole build it runs
// (make, bash, go build and the compilers), not only its first process.
func stopTree(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
}
