package chaos

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes cmd killed when the test process ends, however it
// ends (a timeout's panic, a SIGKILL): no client outlives its run.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
