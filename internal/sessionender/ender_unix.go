//go:build !windows

package sessionender

import "syscall"

// detached starts a process in a session of its own.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
