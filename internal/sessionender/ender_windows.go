//go:build windows

package sessionender

import "syscall"

// detachedProcess is Windows' DETACHED_PROCESS: no console of the parent's.
const detachedProcess = 0x00000008

// detached starts a process without the parent's console, in a process
// group of its own (no Ctrl+C of the console reaches it).
func detached() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP | detachedProcess}
}
